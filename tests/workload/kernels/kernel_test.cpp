#include "tessera/workload/kernels/kernel.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace tessera::workload {
namespace {

Kernel kernel(double flops, double bytes, std::int64_t blocks) {
  return Kernel{.name = "k", .blocks = blocks, .flops_per_block = flops, .bytes_per_block = bytes};
}

TEST(KernelClassTest, EveryClassHasADistinctName) {
  const KernelClass all[] = {
      KernelClass::kGemm,      KernelClass::kConv,          KernelClass::kAttention,
      KernelClass::kNorm,      KernelClass::kElementwise,   KernelClass::kReduction,
      KernelClass::kPointwise, KernelClass::kEmbedding,     KernelClass::kSampling,
      KernelClass::kOptimizer, KernelClass::kCommunication, KernelClass::kOther};
  std::set<std::string> names;
  for (auto c : all) names.emplace(to_string(c));
  EXPECT_EQ(names.size(), std::size(all));
  EXPECT_EQ(to_string(KernelClass::kGemm), "gemm");
  EXPECT_EQ(to_string(KernelClass::kAttention), "attention");
}

TEST(KernelSequenceTest, TotalsCountEveryRepetition) {
  KernelSequence seq;
  seq.groups.push_back({.kernels = {kernel(10, 1, 4)}, .repeat = 1});                  // 40 F, 4 B
  seq.groups.push_back({.kernels = {kernel(2, 3, 5), kernel(1, 1, 1)}, .repeat = 3});  // x3
  EXPECT_EQ(seq.kernel_count(), 1 + 2 * 3);
  EXPECT_DOUBLE_EQ(seq.total_flops(), 40 + 3 * (10 + 1));
  EXPECT_DOUBLE_EQ(seq.total_bytes(), 4 + 3 * (15 + 1));
}

TEST(KernelSequenceTest, EmptySequenceIsZero) {
  const KernelSequence seq;
  EXPECT_EQ(seq.kernel_count(), 0);
  EXPECT_EQ(seq.total_flops(), 0);
  EXPECT_EQ(seq.total_bytes(), 0);
}

// A kernel told apart by its name and grid (each kernel below has its own of both).
Kernel named(std::string_view name, std::int64_t blocks) {
  return Kernel{.name = name, .blocks = blocks, .flops_per_block = 1, .bytes_per_block = 1};
}

// 17 kernels: a; b c d four times; e f twice. Empty groups before, between and after them.
KernelSequence spans_sequence() {
  KernelSequence seq;
  seq.groups.push_back({.kernels = {}, .repeat = 2});               // 0: empty
  seq.groups.push_back({.kernels = {named("a", 1)}, .repeat = 1});  // 1
  seq.groups.push_back({.kernels = {}, .repeat = 1});               // 2: empty
  seq.groups.push_back(                                             // 3
      {.kernels = {named("b", 2), named("c", 3), named("d", 4)}, .repeat = 4});
  seq.groups.push_back({.kernels = {}, .repeat = 3});                              // 4: empty
  seq.groups.push_back({.kernels = {named("e", 5), named("f", 6)}, .repeat = 2});  // 5
  seq.groups.push_back({.kernels = {}, .repeat = 1});                              // 6: empty
  seq.phase = Phase::kDecode;
  seq.graph = true;
  seq.mid_generation = true;
  return seq;
}

// "name/blocks" of `count` kernels from `from`, walked with SequenceCursor (all of them for -1).
std::vector<std::string> walk(const KernelSequence& seq, SequenceCursor c, std::int64_t count) {
  std::vector<std::string> out;
  if (c.group >= seq.groups.size()) return out;
  for (std::int64_t n = 0; count < 0 || n < count; ++n) {
    const Kernel& k = c.kernel(seq);
    out.push_back(std::string(k.name) + "/" + std::to_string(k.blocks));
    if (!c.advance(seq)) break;
  }
  return out;
}

std::vector<std::string> all_kernels(const KernelSequence& seq) {
  return walk(seq, SequenceCursor::first(seq), -1);
}

// Every kernel's cursor, in launch order.
std::vector<SequenceCursor> cursors(const KernelSequence& seq) {
  std::vector<SequenceCursor> out;
  SequenceCursor c = SequenceCursor::first(seq);
  if (c.group >= seq.groups.size()) return out;
  do {
    out.push_back(c);
  } while (c.advance(seq));
  return out;
}

TEST(KernelsFromTest, CountsTheKernelsLeftFromAnyPosition) {
  const KernelSequence seq = spans_sequence();
  ASSERT_EQ(seq.kernel_count(), 17);
  // At the start (the first kernel is past the leading empty group), and at the empty groups
  // themselves, which hold nothing.
  EXPECT_EQ(SequenceCursor::first(seq), (SequenceCursor{.group = 1, .rep = 0, .index = 0}));
  EXPECT_EQ(kernels_from(seq, SequenceCursor::first(seq)), 17);
  EXPECT_EQ(kernels_from(seq, SequenceCursor{}), 17);
  EXPECT_EQ(kernels_from(seq, {.group = 2, .rep = 0, .index = 0}), 16);
  EXPECT_EQ(kernels_from(seq, {.group = 4, .rep = 0, .index = 0}), 4);
  EXPECT_EQ(kernels_from(seq, {.group = 6, .rep = 0, .index = 0}), 0);
  // Mid-repetition: d of b c d's second repetition, then two more repetitions and e f twice.
  EXPECT_EQ(kernels_from(seq, {.group = 3, .rep = 1, .index = 2}), 1 + 2 * 3 + 4);
  EXPECT_EQ(kernels_from(seq, {.group = 3, .rep = 3, .index = 0}), 3 + 4);
  // In a later group.
  EXPECT_EQ(kernels_from(seq, {.group = 5, .rep = 1, .index = 0}), 2);
  EXPECT_EQ(kernels_from(seq, {.group = 5, .rep = 1, .index = 1}), 1);
  // Past the end.
  EXPECT_EQ(kernels_from(seq, {.group = 7, .rep = 0, .index = 0}), 0);
  EXPECT_EQ(kernels_from(seq, {.group = 1000, .rep = 0, .index = 0}), 0);
  // At every kernel it agrees with walking the rest of the sequence.
  const auto all = cursors(seq);
  ASSERT_EQ(all.size(), 17U);
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(kernels_from(seq, all[i]), static_cast<std::int64_t>(all.size() - i)) << i;
  }
  EXPECT_EQ(kernels_from(KernelSequence{}, SequenceCursor{}), 0);
}

TEST(SpanOfTest, CopiesExactlyTheKernelsTheCursorWalks) {
  const KernelSequence seq = spans_sequence();
  const auto all = cursors(seq);
  for (const auto& from : all) {
    const std::int64_t left = kernels_from(seq, from);
    for (std::int64_t count = 1; count <= left; ++count) {
      SCOPED_TRACE(testing::Message() << "from group " << from.group << " rep " << from.rep
                                      << " index " << from.index << ", " << count << " kernels");
      const KernelSequencePtr part = span_of(seq, from, count);
      ASSERT_NE(part, nullptr);
      EXPECT_EQ(part->kernel_count(), count);
      EXPECT_EQ(all_kernels(*part), walk(seq, from, count));
      EXPECT_EQ(part->phase, Phase::kDecode);
      EXPECT_TRUE(part->graph);
      EXPECT_TRUE(part->mid_generation);
      for (const auto& g : part->groups) {
        EXPECT_FALSE(g.kernels.empty());
        EXPECT_GE(g.repeat, 1);
      }
    }
  }
}

TEST(SpanOfTest, KeepsFlagsOfAPlainSequence) {
  KernelSequence seq = spans_sequence();
  seq.phase = Phase::kTraining;
  seq.graph = false;
  seq.mid_generation = false;
  const auto part = span_of(seq, {.group = 3, .rep = 0, .index = 1}, 5);
  EXPECT_EQ(part->phase, Phase::kTraining);
  EXPECT_FALSE(part->graph);
  EXPECT_FALSE(part->mid_generation);
}

TEST(SpanOfTest, WholeRepetitionsStayOneRepeatedGroup) {
  const KernelSequence seq = spans_sequence();
  // From d of the second repetition of b c d: d, two whole repetitions, then e f once and e.
  const auto part = span_of(seq, {.group = 3, .rep = 1, .index = 2}, 1 + 2 * 3 + 2 + 1);
  ASSERT_EQ(part->groups.size(), 4U);
  EXPECT_EQ(all_kernels(KernelSequence{.groups = {part->groups[0]}}),
            (std::vector<std::string>{"d/4"}));
  EXPECT_EQ(part->groups[0].repeat, 1);
  EXPECT_EQ(all_kernels(KernelSequence{.groups = {part->groups[1]}}),
            (std::vector<std::string>{"b/2", "c/3", "d/4", "b/2", "c/3", "d/4"}));
  EXPECT_EQ(part->groups[1].kernels.size(), 3U);
  EXPECT_EQ(part->groups[1].repeat, 2);
  EXPECT_EQ(part->groups[2].kernels.size(), 2U);
  EXPECT_EQ(part->groups[2].repeat, 1);
  EXPECT_EQ(part->groups[3].kernels.size(), 1U);
  EXPECT_EQ(part->groups[3].kernels[0].name, "e");
  EXPECT_EQ(part->groups[3].repeat, 1);

  // From the start of a repetition: the rest of the group as one repeated group, then the next
  // group's repetitions likewise.
  const auto whole = span_of(seq, {.group = 3, .rep = 1, .index = 0}, 3 * 3 + 4);
  ASSERT_EQ(whole->groups.size(), 2U);
  EXPECT_EQ(whole->groups[0].kernels.size(), 3U);
  EXPECT_EQ(whole->groups[0].repeat, 3);
  EXPECT_EQ(whole->groups[1].kernels.size(), 2U);
  EXPECT_EQ(whole->groups[1].repeat, 2);

  // The whole sequence: its non-empty groups, repeats kept.
  const auto everything = span_of(seq, SequenceCursor::first(seq), 17);
  ASSERT_EQ(everything->groups.size(), 3U);
  EXPECT_EQ(everything->groups[0].repeat, 1);
  EXPECT_EQ(everything->groups[1].repeat, 4);
  EXPECT_EQ(everything->groups[2].repeat, 2);
  EXPECT_EQ(all_kernels(*everything), all_kernels(seq));

  // Inside one repetition: just those kernels.
  const auto inside = span_of(seq, {.group = 3, .rep = 2, .index = 1}, 1);
  ASSERT_EQ(inside->groups.size(), 1U);
  EXPECT_EQ(all_kernels(*inside), (std::vector<std::string>{"c/3"}));
}

}  // namespace
}  // namespace tessera::workload
