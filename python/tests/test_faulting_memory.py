"""register_buffer and the *_into calls with memory a get would fault on
(issue 28): before, register_buffer of unmapped or PROT_READ memory
answered 0 and the next get_into killed the interpreter with SIGSEGV. Each
call is made in a child interpreter (faulting_memory_script.py) so that a
crash is seen as one, not as the end of this pytest run."""

import json
import os
import subprocess
import sys

import pytest

INVALID_PARAMS = -600
SCRIPT = os.path.join(os.path.dirname(__file__), "faulting_memory_script.py")


def run_script(master_addr, segment_bytes):
    r = subprocess.run([sys.executable, SCRIPT, master_addr, str(segment_bytes)],
                       capture_output=True, text=True, timeout=120)
    answers = {}
    for line in r.stdout.splitlines():
        step = json.loads(line)
        answers[step["step"]] = step["answer"]
    return r, answers


# 0: reads come over UCX from the session's node; 16 MiB: this process hosts
# a segment too, and an object placed there is copied by memcpy.
@pytest.mark.parametrize("segment_bytes", [0, 16 << 20])
def test_memory_a_get_would_fault_on_answers_codes(master_addr, segment_bytes):
    r, answers = run_script(master_addr, segment_bytes)
    context = "exit %s\n%s%s" % (r.returncode, r.stdout, r.stderr)
    assert r.returncode == 0, context
    assert answers["put"] == 0, context
    for name in ("unmapped", "read_only", "none"):
        assert answers[name + ":register_buffer"] == INVALID_PARAMS, context
        assert answers[name + ":get_into"] == INVALID_PARAMS, context
        assert answers[name + ":batch_get_into"] == [INVALID_PARAMS], context
        assert answers[name + ":batch_get_into_multi_buffers"] == [INVALID_PARAMS], context
    page = answers["good:get_into"]
    assert answers["good:register_buffer"] == 0, context
    assert answers["good:get_into_past_end"] == INVALID_PARAMS, context
    assert answers["good:batch_get_into_past_end"] == [INVALID_PARAMS], context
    assert page > 0 and answers["good:bytes_match"] is True, context
    assert answers["good:unregister_buffer"] == 0, context
    assert answers["done"] == 0, context
