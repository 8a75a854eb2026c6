#include "transport/challenge_book.h"

#include <gtest/gtest.h>

#include <set>

namespace shelfmark {
namespace {

TEST(ChallengeBook, ATicketIsTakenOnceWithItsNonceAndContext) {
  ManualClock clock;
  ChallengeBook book(&clock);
  ChallengeBook::Challenge a = book.Issue("peer nonce");
  ChallengeBook::Challenge b = book.Issue();
  EXPECT_NE(a.ticket, 0u);
  EXPECT_NE(a.ticket, b.ticket);
  EXPECT_NE(a.nonce, b.nonce);
  EXPECT_EQ(book.outstanding(), 2u);
  std::optional<ChallengeBook::Issued> taken = book.Take(a.ticket);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->nonce, a.nonce);
  EXPECT_EQ(taken->context, "peer nonce");
  EXPECT_FALSE(book.Take(a.ticket).has_value());  // single use: a replay finds nothing
  EXPECT_EQ(book.outstanding(), 1u);
  EXPECT_FALSE(book.Take(a.ticket ^ b.ticket).has_value());  // never issued
  EXPECT_TRUE(book.Take(b.ticket).has_value());
  EXPECT_EQ(book.outstanding(), 0u);
}

TEST(ChallengeBook, AnExpiredTicketIsRefusedAndForgotten) {
  ManualClock clock;
  ChallengeBook book(&clock, 16, 1000);
  ChallengeBook::Challenge old = book.Issue();
  clock.AdvanceMs(999);
  ChallengeBook::Challenge young = book.Issue();
  clock.AdvanceMs(1);
  EXPECT_FALSE(book.Take(old.ticket).has_value());
  EXPECT_TRUE(book.Take(young.ticket).has_value());
  // Expired ones are swept when the next is issued.
  for (int i = 0; i < 3; ++i) book.Issue();
  clock.AdvanceMs(1000);
  book.Issue();
  EXPECT_EQ(book.outstanding(), 1u);
}

TEST(ChallengeBook, IssuingBeyondTheCapacityForgetsTheOldest) {
  ManualClock clock;
  ChallengeBook book(&clock, 4, 30'000);
  std::vector<uint64_t> tickets;
  for (int i = 0; i < 6; ++i) tickets.push_back(book.Issue(std::to_string(i)).ticket);
  EXPECT_EQ(book.outstanding(), 4u);
  EXPECT_FALSE(book.Take(tickets[0]).has_value());
  EXPECT_FALSE(book.Take(tickets[1]).has_value());
  for (int i = 2; i < 6; ++i) {
    auto issued = book.Take(tickets[i]);
    ASSERT_TRUE(issued.has_value()) << i;
    EXPECT_EQ(issued->context, std::to_string(i));
  }
  std::set<uint64_t> distinct(tickets.begin(), tickets.end());
  EXPECT_EQ(distinct.size(), tickets.size());
}

}  // namespace
}  // namespace shelfmark
