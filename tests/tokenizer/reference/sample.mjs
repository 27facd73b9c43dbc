// The text every reference test encodes, as bytes: several scripts, emoji (with ZWJ sequences
// and skin tones), runs of spaces, tabs and newlines (trailing ones too), contractions in both
// cases, digits, GPT-2's special token, and ill-formed UTF-8 of every kind a decoder meets.
//
// What is compared: the references are JavaScript and take strings, so they see
// new TextDecoder().decode(bytes): each maximal ill-formed subsequence becomes U+FFFD. gradsync
// reads the bytes themselves and promises the same reading, so the ids must agree on every
// byte. U+0085 and U+FEFF are left out: JavaScript's \s (gpt-3-encoder, js-tiktoken) disagrees
// with Unicode's White_Space, which gradsync (like tiktoken and Hugging Face in Rust) follows.
const text = [
  "Hello world! It's a test: we're here, you've seen it, I'm sure they'll say it'd work.\n",
  "IT'S LOUD, WE'RE LOUD, THEY'LL SHOUT. Don't stop's 're 've 'm 'll 'd 'x\n",
  "DON'TS, SHE'SA, I'MOK, WE'REALLY, they'LLX, 'VEX 'D9\n",
  "Numbers: 0 1 12 123 1234 12345 3.14159 1,000,000 2024-05-20 ٣٤٥ ४२ Ⅻ ½\n",
  "Grüße aus München — naïve café, façade, Ærøskøbing, İstanbul, ß.\n",
  "Здравствуй, мир! Ελληνικά γράμματα. עברית עם ניקוד. مرحبا بالعالم.\n",
  "日本語のテキスト、漢字とかな。中文文本，标点符号。한국어 텍스트입니다.\n",
  "हिन्दी पाठ, தமிழ் உரை, ภาษาไทย, ქართული.\n",
  "Emoji: 😀 👍🏽 👩‍👩‍👧‍👦 🇫🇷 ❤️ 🧑🏿‍🚀 a😀b\n",
  "Spaces:  two   three    four     five\tone tab\t\ttwo tabs \t mixed\n",
  "trailing spaces   \n",
  "\n\n\nthree newlines above\r\nCRLF line\r\n",
  "   leading spaces and\u00a0no-break\u2003em space\u3000ideographic\n",
  "Symbols: @#$%^&*()_+-=[]{}|;':\",./<>? ~`… «quoted» “curly” ‘single’\n",
  "Code: for (int i = 0; i < n; ++i) { x += a[i] * b[i]; }\n",
  "<|endoftext|>after the special token<|endoftext|> and before\n",
  "around an added token  <|sep|>  and\t<|sep|>\nend\n",
].join("");

// Ill-formed sequences, each between ASCII letters: a lone continuation byte, a lone lead byte,
// truncated 3- and 4-byte sequences, an overlong encoding, an encoded surrogate, a code point
// above U+10FFFF, bytes that never occur (C0, F5, FF), and one at the very end.
const invalid = [
  [0x80], [0xbf, 0x80], [0xc3], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xc0, 0xaf], [0xe0, 0x80, 0xaf],
  [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xf5], [0xff], [0xfe, 0xfe],
];

export function sampleBytes() {
  const parts = [Buffer.from(text, "utf8")];
  for (const seq of invalid) parts.push(Buffer.from("x"), Buffer.from(seq), Buffer.from("y "));
  parts.push(Buffer.from(" end"), Buffer.from([0xe2, 0x82]));
  return Buffer.concat(parts);
}
