// Hugging Face tokenizer.json files built from GPT-2's encoder.json and vocab.bpe, in the shapes
// real files take: GPT-2's own (ByteLevel with its regex), with add_prefix_space, and the
// Llama-3 and Qwen2 shapes (a Split with their pattern, then ByteLevel without a regex). The
// vocabulary is GPT-2's in each, so that only the pipeline differs; two added tokens with lstrip
// and rstrip stand in for the special tokens such files add.
import fs from "node:fs";
import path from "node:path";

const gpt2Regex = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const llama3Regex = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const qwen2Regex = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

function byteLevel(addPrefixSpace, useRegex) {
  return { type: "ByteLevel", add_prefix_space: addPrefixSpace, trim_offsets: true, use_regex: useRegex };
}

function added(id, content, strip) {
  return { id, content, single_word: false, lstrip: strip, rstrip: strip, normalized: false, special: true };
}

export function gpt2TokenizerJson(dir, variant) {
  const vocab = JSON.parse(fs.readFileSync(path.join(dir, "encoder.json"), "utf8"));
  const lines = fs.readFileSync(path.join(dir, "vocab.bpe"), "utf8").split("\n");
  const merges = lines.slice(1).filter((l) => l.trim() !== "");
  const next = Object.keys(vocab).length;
  const split = (regex) => ({
    type: "Sequence",
    pretokenizers: [
      { type: "Split", pattern: { Regex: regex }, behavior: "Isolated", invert: false },
      byteLevel(false, false),
    ],
  });
  const pre = {
    gpt2: byteLevel(false, true),
    "gpt2-prefix": byteLevel(true, true),
    llama3: split(llama3Regex),
    qwen2: split(qwen2Regex),
  }[variant];
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: [added(50256, "<|endoftext|>", false), added(next, "<|sep|>", true)],
    normalizer: null,
    pre_tokenizer: pre,
    post_processor: byteLevel(true, true),
    decoder: byteLevel(true, true),
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: "",
      end_of_word_suffix: "",
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: variant === "llama3",
      vocab,
      // Qwen2's files list merges as pairs, the older ones as "A B" strings: both are read.
      merges: variant === "qwen2" ? merges.map((m) => m.split(" ")) : merges,
    },
  };
}

export { gpt2Regex };
