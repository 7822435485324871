/**
 * The language detector gives franc's answer: on SciFact abstracts, on texts made of every
 * franc-min language's own trigrams (all 82 languages, several scripts), on short, mixed,
 * digit-only and empty texts.
 */
import { franc } from "franc-min"
import { data } from "franc-min/data.js"
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { detectLanguage, franc3, languageSample } from "../../src/engines/documents/internal/chunk/language.js"
import { sharedPath } from "../../src/internal/shared.js"

const reference = (sample: string) => franc(sample, { minLength: 10 })

describe("language detection", () => {
  it("answers as franc on 300 SciFact abstracts", () => {
    const lines = readFileSync(sharedPath("bench", "scifact", "corpus.jsonl"), "utf8").split("\n").slice(0, 300)
    for (const line of lines.filter(Boolean)) {
      const doc = JSON.parse(line) as { title: string; text: string }
      const sample = languageSample(`# ${doc.title}\n\n${doc.text}`)
      expect(franc3(sample)).toBe(reference(sample))
    }
  })

  it("answers as franc on every franc-min language, and on edge cases", () => {
    const samples: Array<string> = []
    for (const languages of Object.values(data)) {
      for (const model of Object.values(languages)) {
        const trigrams = model.split("|")
        samples.push(trigrams.slice(0, 60).join(""), trigrams.slice(100, 140).join(" "))
      }
    }
    samples.push(
      "",
      "short",
      "1234567890 2024 3.14159",
      "The quick brown fox jumps over the lazy dog. Der schnelle braune Fuchs springt.",
      "これは日本語の文章です。今日は良い天気ですね。",
      "Привет, как дела? Это тестовый текст на русском языке.",
      "Le café est une boisson préparée à partir des graines torréfiées du caféier.",
      "مرحبا بكم في هذا النص العربي القصير",
      "這是一段中文文字，用於測試語言偵測。",
      // scripts between ASCII runs (the script count runs the expressions over the non-ASCII rest)
      "Résumé: Привет мир, hello world; Γειά σου κόσμε 123 نص عربي and more English words here",
      "abc привет def мир ghi Γειά jkl σου mno こんにちは pqr 世界 stu नमस्ते vwx",
      "Zürich, São Paulo, Kraków, Ærøskøbing — naïve café façade coöperate",
      "x\uD806y\uDF00z: lone surrogates apart, 𑌀𑌁 together"
    )
    let judged = 0
    for (const s of samples) {
      expect(franc3(s), JSON.stringify(s.slice(0, 40))).toBe(reference(s))
      if (reference(s) !== "und") judged++
    }
    expect(judged).toBeGreaterThan(80)
    // again in reverse order: the counts a scoring leaves in the models' trigrams do not leak into the next
    for (const s of [...samples].reverse()) expect(franc3(s), JSON.stringify(s.slice(0, 40))).toBe(reference(s))
    expect(detectLanguage("# Title\n\nThe results of the study show that the treatment improves outcomes.")).toBe("en")
    expect(detectLanguage("")).toBe("")
  })
})
