#include "sim/input.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace sim {
namespace {

using Kind = InputEvent::Kind;
using Key = InputEvent::Key;

// What a stream means, split-independent: the echo the events draw (text
// appended, erasures removed) and every other event in order.
struct Meaning {
  std::string echo;
  std::vector<std::string> others;
};

Meaning Interpret(const std::vector<InputEvent>& events) {
  Meaning meaning;
  for (const InputEvent& event : events) {
    if (event.kind == Kind::kText) {
      meaning.echo += event.text;
    } else if (event.kind == Kind::kErase) {
      EXPECT_GE(meaning.echo.size(), event.text.size());
      meaning.echo.resize(meaning.echo.size() - event.text.size());
    } else {
      meaning.others.push_back(DescribeEvent(event));
      if (event.kind == Kind::kSubmit || event.kind == Kind::kTooLong) meaning.echo += "⏎";
    }
  }
  return meaning;
}

std::vector<InputEvent> Decode(absl::string_view bytes, InputOptions options = {}) {
  InputDecoder decoder(options);
  std::vector<InputEvent> events;
  decoder.Feed(bytes, &events);
  decoder.Flush(&events);
  return events;
}

std::vector<std::string> Submits(const std::vector<InputEvent>& events) {
  std::vector<std::string> prompts;
  for (const InputEvent& event : events) {
    if (event.kind == Kind::kSubmit) prompts.push_back(event.text);
  }
  return prompts;
}

InputEvent Interrupt(Key key) {
  InputEvent event;
  event.kind = Kind::kInterrupt;
  event.key = key;
  return event;
}

TEST(InputDecoderTest, CarriageReturnSubmitsTypedText) {
  std::vector<InputEvent> events = Decode("hello\r");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, Kind::kText);
  EXPECT_EQ(events[0].text, "hello");
  EXPECT_EQ(events[1].kind, Kind::kSubmit);
  EXPECT_EQ(events[1].text, "hello");
}

TEST(InputDecoderTest, LineFeedIsANewlineOnATerminal) {
  // tmux `send-keys -l $'a\nb'` then Enter: 61 0a 62 0d.
  EXPECT_THAT(Submits(Decode("a\nb\r")), ::testing::ElementsAre("a\nb"));
}

TEST(InputDecoderTest, LineFeedSubmitsWhenNotATerminal) {
  InputOptions pipe;
  pipe.lf_submits = true;
  EXPECT_THAT(Submits(Decode("one\ntwo\r\nthree\n", pipe)),
              ::testing::ElementsAre("one", "two", "three"));
}

TEST(InputDecoderTest, BackslashBeforeEnterIsANewline) {
  EXPECT_THAT(Submits(Decode("first\\\rsecond\r")), ::testing::ElementsAre("first\nsecond"));
  InputOptions pipe;
  pipe.lf_submits = true;
  EXPECT_THAT(Submits(Decode("first\\\nsecond\n", pipe)), ::testing::ElementsAre("first\nsecond"));
}

TEST(InputDecoderTest, BackslashErasureIsReportedWhenAlreadyEchoed) {
  InputDecoder decoder;
  std::vector<InputEvent> events;
  decoder.Feed("a\\", &events);
  decoder.Feed("\r", &events);
  EXPECT_EQ(Interpret(events).echo, "a\n");
  EXPECT_EQ(decoder.line(), "a\n");
}

TEST(InputDecoderTest, UnicodeIsKeptAndBackspaceRemovesWholeCharacters) {
  EXPECT_THAT(Submits(Decode("héllo wörld ✻ 🎉\r")), ::testing::ElementsAre("héllo wörld ✻ 🎉"));
  EXPECT_THAT(Submits(Decode("ab🎉\x7f\x7f" "c\r")), ::testing::ElementsAre("ac"));
  EXPECT_THAT(Submits(Decode("é\x08\r")), ::testing::ElementsAre(""));
}

TEST(InputDecoderTest, BackspaceRemovesInvalidUtf8ByteByByte) {
  EXPECT_THAT(Submits(Decode("a\xff\xfe\x7f\r")), ::testing::ElementsAre("a\xff"));
  EXPECT_THAT(Submits(Decode("a\x80\x80\x7f\r")), ::testing::ElementsAre("a\x80"));
}

TEST(InputDecoderTest, InvalidUtf8IsKept) {
  EXPECT_THAT(Submits(Decode("bad \xc3\x28 and \xed\xa0\x80\r")),
              ::testing::ElementsAre("bad \xc3\x28 and \xed\xa0\x80"));
}

TEST(InputDecoderTest, ShellMetacharactersAreText) {
  const std::string text = "echo \"$HOME\" 'x' `y` $(z) | & ; < > * ? ~ # \\n";
  EXPECT_THAT(Submits(Decode(text + "\r")), ::testing::ElementsAre(text));
}

TEST(InputDecoderTest, PromptsOverFourKilobytesArriveWhole) {
  std::string big;
  while (big.size() < 10000) big += "line ünïcødé " + std::to_string(big.size()) + "\n";
  big += "end";
  EXPECT_THAT(Submits(Decode(big + "\r")), ::testing::ElementsAre(big));
}

TEST(InputDecoderTest, PromptPastTheBoundIsRefusedAndTheNextOneIsKept) {
  InputOptions options;
  options.max_prompt_bytes = 10;
  std::vector<InputEvent> events = Decode("0123456789abc\rok\r", options);
  EXPECT_THAT(Interpret(events).others, ::testing::ElementsAre("too-long(13)", "submit(\"ok\")"));
  // Text past the bound is not echoed.
  InputDecoder decoder(options);
  std::vector<InputEvent> piecewise;
  decoder.Feed("0123456789", &piecewise);
  decoder.Feed("abc", &piecewise);
  EXPECT_EQ(Interpret(piecewise).echo, "0123456789");
}

TEST(InputDecoderTest, DefaultBoundIsOneMebibyte) {
  std::string huge(size_t{1} << 20, 'x');
  EXPECT_THAT(Submits(Decode(huge + "\r")), ::testing::ElementsAre(huge));
  std::vector<InputEvent> events = Decode(huge + "y\r");
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, Kind::kTooLong);
  EXPECT_EQ(events.back().bytes, huge.size() + 1);
}

TEST(InputDecoderTest, LoneEscapeWaitsForFlush) {
  InputDecoder decoder;
  std::vector<InputEvent> events;
  decoder.Feed("\x1b", &events);
  EXPECT_TRUE(events.empty());
  EXPECT_TRUE(decoder.escape_pending());
  decoder.Flush(&events);
  EXPECT_THAT(events, ::testing::ElementsAre(Interrupt(Key::kEscape)));
  EXPECT_FALSE(decoder.escape_pending());
}

TEST(InputDecoderTest, EscapeFollowedByOtherByteIsEscapeThenThatByte) {
  std::vector<InputEvent> events = Decode("\x1bx\r");
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0], Interrupt(Key::kEscape));
  EXPECT_EQ(events[1].text, "x");
  EXPECT_EQ(events[2].kind, Kind::kSubmit);
  EXPECT_THAT(Decode("\x1b\x1b"),
              ::testing::ElementsAre(Interrupt(Key::kEscape), Interrupt(Key::kEscape)));
}

TEST(InputDecoderTest, CsiAndSs3SequencesAreSkipped) {
  // Arrows (CSI and SS3 forms), Home/End, F5, a focus event, a modified key.
  EXPECT_THAT(Submits(Decode("a\x1b[A\x1b[Bb\x1bOC\x1b[1;5Dc\x1b[15~\x1b[I\x1bOHd\r")),
              ::testing::ElementsAre("abcd"));
  EXPECT_TRUE(Decode("\x1b[A").empty());
}

TEST(InputDecoderTest, BracketedPasteIsTextCarriageReturnsIncluded) {
  EXPECT_THAT(Submits(Decode("x\x1b[200~one\rtwo\r\nthree\x03\x1b[201~y\r")),
              ::testing::ElementsAre("xone\ntwo\nthreey"));
}

TEST(InputDecoderTest, PasteKeepsEscapesThatDoNotEndIt) {
  EXPECT_THAT(Submits(Decode("\x1b[200~a\x1b[20b\x1b\x1b[201~\r")),
              ::testing::ElementsAre("a[20b"));
}

TEST(InputDecoderTest, CtrlCAndCtrlD) {
  EXPECT_THAT(Decode("\x04"), ::testing::ElementsAre(InputEvent{Kind::kEndOfInput, "", Key::kEscape, 0}));
  std::vector<InputEvent> events = Decode("ab\x04\x03");
  ASSERT_EQ(events.size(), 2u);  // Ctrl-D on a typed line does nothing
  EXPECT_EQ(events[0].text, "ab");
  EXPECT_EQ(events[1], Interrupt(Key::kCtrlC));
}

TEST(InputDecoderTest, OtherControlsAreDroppedTabIsKept) {
  EXPECT_THAT(Submits(Decode(absl::string_view("a\x01\x02\tb\x15\x1a\x00" "c\r", 10))), ::testing::ElementsAre("a\tbc"));
}

TEST(InputDecoderTest, ClearAndSetLine) {
  InputDecoder decoder;
  std::vector<InputEvent> events;
  decoder.Feed("typed", &events);
  decoder.ClearLine();
  EXPECT_EQ(decoder.line(), "");
  decoder.SetLine("queued one\nqueued two");
  decoder.Feed("!\r", &events);
  EXPECT_THAT(Submits(events), ::testing::ElementsAre("queued one\nqueued two!"));
}

// A slow reader gets typing, Ctrl-C and more typing in one read: what the
// caller does about the Ctrl-C (clear the line) applies to the text after it,
// as it would have had the bytes come one read each.
TEST(InputDecoderTest, CallerActsOnAnEventBeforeTheBytesAfterIt) {
  InputDecoder decoder;
  std::vector<std::string> seen;
  decoder.Feed("abandoned\x03ship it\r", [&](InputEvent event) {
    seen.push_back(DescribeEvent(event));
    if (event.kind == Kind::kInterrupt) decoder.ClearLine();
  });
  EXPECT_THAT(seen, ::testing::ElementsAre("text(\"abandoned\")", "interrupt(ctrl-c)",
                                           "text(\"ship it\")", "submit(\"ship it\")"));
}

// Escape then a byte that starts no sequence: the Escape is handed over (and
// acted on: an interrupt hands queued prompts back to the line) before that
// byte is typed into the line.
TEST(InputDecoderTest, ByteAfterALoneEscapeIsTypedIntoTheLineTheCallerSet) {
  InputDecoder decoder;
  std::vector<std::string> submits;
  decoder.Feed("\x1bx\r", [&](InputEvent event) {
    if (event.kind == Kind::kInterrupt) decoder.SetLine("queued ");
    if (event.kind == Kind::kSubmit) submits.push_back(event.text);
  });
  EXPECT_THAT(submits, ::testing::ElementsAre("queued x"));
}

// A stream with a bit of everything, fed whole, in two pieces split at every
// byte, and a byte at a time: the same meaning each way.
TEST(InputDecoderTest, EverySplitMeansTheSame) {
  const std::string stream =
      "héllo 🎉\x7fworld\\\rnext\x1b[A\x1bOB\x1b[200~pa\rste\r\n\x1b[201~\x08!\r"
      "\xff\xc3\x28\x7f\x03\x1b[1;5C" "x\x04\r\x04";
  for (bool lf_submits : {false, true}) {
    InputOptions options;
    options.lf_submits = lf_submits;
    const Meaning whole = Interpret(Decode(stream, options));
    ASSERT_FALSE(whole.others.empty());
    for (size_t split = 0; split <= stream.size(); ++split) {
      InputDecoder decoder(options);
      std::vector<InputEvent> events;
      decoder.Feed(absl::string_view(stream).substr(0, split), &events);
      decoder.Feed(absl::string_view(stream).substr(split), &events);
      decoder.Flush(&events);
      const Meaning split_meaning = Interpret(events);
      EXPECT_EQ(split_meaning.echo, whole.echo) << "split at " << split;
      EXPECT_EQ(split_meaning.others, whole.others) << "split at " << split;
    }
    InputDecoder decoder(options);
    std::vector<InputEvent> events;
    for (char c : stream) decoder.Feed(absl::string_view(&c, 1), &events);
    decoder.Flush(&events);
    EXPECT_EQ(Interpret(events).echo, whole.echo);
    EXPECT_EQ(Interpret(events).others, whole.others);
  }
}

}  // namespace
}  // namespace sim
}  // namespace understudy
