/**
 * The chunk tokenizer counts as tiktoken does: gpt-tokenizer's counts against js-tiktoken's
 * (the reference port of tiktoken, a devDependency) for both shipped encodings, on SciFact
 * abstracts and on special-token, emoji, CJK, Cyrillic, long-run and whitespace texts.
 */
import { Tiktoken } from "js-tiktoken/lite"
import cl100k from "js-tiktoken/ranks/cl100k_base"
import o200k from "js-tiktoken/ranks/o200k_base"
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { maxRunChars, tiktoken } from "../../src/engines/documents/internal/chunk/tokenizer.js"
import { sharedPath } from "../../src/internal/shared.js"

const texts = [
  ...readFileSync(sharedPath("bench", "scifact", "corpus.jsonl"), "utf8").split("\n").filter(Boolean).slice(0, 100)
    .map((line) => {
      const d = JSON.parse(line) as { title: string; text: string }
      return `# ${d.title}\n\n${d.text}`
    }),
  "<|endoftext|> text <|im_start|>user<|im_end|> <|fim_prefix|>",
  "🎉 emoji, ü, 日本語のテキスト, Привет мир, مرحبا",
  "a".repeat(5000),
  "  \n\n  x  \n\t\t y",
  "| a | b |\n|---|---|\n| 1 | 2 |",
  ""
]

describe("tokenizer", () => {
  for (const [encoding, ranks] of [["cl100k_base", cl100k], ["o200k_base", o200k]] as const) {
    it(`${encoding}: the same counts as tiktoken`, async () => {
      const tok = await tiktoken(encoding)
      const reference = new Tiktoken(ranks)
      expect(tok.name).toBe(encoding)
      for (const text of texts) expect(tok.count(text), JSON.stringify(text.slice(0, 40))).toBe(reference.encode(text, [], []).length)
    })
  }

  it("piece by piece with its memo: the same counts as tiktoken on random texts of whitespace, letters, digits, marks and symbols", async () => {
    // a fixed pseudo-random sequence (no Math.random: the same texts every run)
    let seed = 20261127
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed % n
    }
    const alphabet = [" ", " ", "  ", "\n", "\r\n", "\t", "\n\n", "a", "Bc", "the", "'s", "'LL", "'", "9", "12345", ".", "/", "--", "é", "ß", "日本", "🎉", "\u00a0", "x\u0301", "<|endoftext|>"]
    const texts = Array.from({ length: 400 }, () => Array.from({ length: 1 + next(24) }, () => alphabet[next(alphabet.length)]).join(""))
    for (const [encoding, ranks] of [["cl100k_base", cl100k], ["o200k_base", o200k]] as const) {
      const tok = await tiktoken(encoding)
      const reference = new Tiktoken(ranks)
      // twice: the second pass counts from the memo
      for (let pass = 0; pass < 2; pass++) {
        for (const text of texts) expect(tok.count(text), `${encoding} ${JSON.stringify(text)}`).toBe(reference.encode(text, [], []).length)
      }
    }
  })

  it("a run without whitespace longer than maxRunChars is counted in slices (bounded work, a close count)", async () => {
    const tok = await tiktoken("cl100k_base")
    const reference = new Tiktoken(cl100k)
    // a pseudo-random letter run: no repeated word for the cache to help with
    const run = (n: number) => Array.from({ length: n }, (_, i) => String.fromCharCode(97 + ((i * 7919) % 26))).join("")
    const text = `Intro words here. ${run(3 * maxRunChars + 100)} and the end.`
    const exact = reference.encode(text, [], []).length
    const counted = tok.count(text)
    expect(counted).toBeGreaterThanOrEqual(exact)
    expect(counted - exact).toBeLessThanOrEqual(4 * 3) // a few tokens per slice boundary
    // 256 KiB of one "word" finishes (quadratic BPE over one piece would take minutes)
    const huge = tok.count(run(1 << 18))
    expect(huge).toBeGreaterThan((1 << 18) / 8)
  })
})
