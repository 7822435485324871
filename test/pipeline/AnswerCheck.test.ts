/**
 * `AnswerCheck`: sentence splitting around citation marks, the support score on answers whose
 * right status is plain from the text, and the LLM judge against a scripted chat model served on
 * loopback (the HTTP edge): what it is sent, and how its replies become statuses.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Chat from "../../src/api/Chat.js"
import type * as Answer from "../../src/pipeline/Answer.js"
import * as AnswerCheck from "../../src/pipeline/AnswerCheck.js"
import { clientLayer, startServer } from "../support/server.js"

const source = (n: number, text: string, title?: string): Answer.Source => ({
  n,
  id: `c${n}`,
  documentId: `d${n}`,
  score: 1,
  text,
  metadata: {},
  source: `doc${n}.md`,
  page: undefined,
  place: undefined,
  chunk: undefined,
  title
})

const sources = [
  source(1, "The Fresnel lens was invented by Augustin Fresnel in 1822 to make lighthouse beams visible from far away.", "Lighthouse optics"),
  source(2, "The harbour was dredged in 1910 so that steamships could dock at the quay.")
]

describe("AnswerCheck", () => {
  it("splits sentences after the citation marks that follow their full stop, and at line breaks; keeps decimals", () => {
    expect(AnswerCheck.sentences("It was 1.5 m wide [1]. Then it moved.[2] Why?\nA list item").map((s) => s.text)).toEqual([
      "It was 1.5 m wide [1].",
      "Then it moved.[2]",
      "Why?",
      "A list item"
    ])
    const text = "First one [1].  Second [2]."
    for (const s of AnswerCheck.sentences(text)) expect(text.slice(s.offset, s.offset + s.text.length)).toBe(s.text)
  })

  it("marks a sentence whose cited passage does not hold it, one citing an unknown source, and one citing nothing", () => {
    const c = AnswerCheck.check({
      text: "Augustin Fresnel invented the lens in 1822 [1]. The harbour was dredged in 1910 [1]. " +
        "Steamships docked at the quay [7]. Bananas grow in the tropics. That is all.",
      sources
    })
    expect(c.sentences.map((s) => s.status)).toEqual(["supported", "unsupported", "unsupported", "uncited", "no-claim"])
    expect(c.sentences[0]!.support).toBe(1)
    expect(c.sentences[1]!.support).toBeLessThan(AnswerCheck.defaultThreshold)
    expect(c.sentences[2]!).toMatchObject({ cited: [7], support: 0 })
    expect(c).toMatchObject({ threshold: 0.5, supported: 1, unsupported: 2, uncited: 1 })
    // the same sentence citing the right passage is supported; several citations pool their passages
    const right = AnswerCheck.check({ text: "The harbour was dredged in 1910 [1][2].", sources })
    expect(right.sentences[0]!.status).toBe("supported")
    const text = AnswerCheck.format(c)
    expect(text).toMatch(/^Check \(lexical support, threshold 0\.5\): 1 of 4 sentence\(s\) supported by their citations, 2 unsupported, 1 without citation$/m)
    expect(text).toContain("  unsupported (0.00): Steamships docked at the quay [7].")
    expect(text).toContain("  no citation: Bananas grow in the tropics.")
  })

  it("a threshold of 0 accepts any cited sentence with a known source; 1 needs every content word", () => {
    const text = "Fresnel designed lenses for ships [1]."
    expect(AnswerCheck.check({ text, sources }, { threshold: 0 }).sentences[0]!.status).toBe("supported")
    expect(AnswerCheck.check({ text, sources }, { threshold: 1 }).sentences[0]!.status).toBe("unsupported")
  })
})

/** A scripted judge: its reply depends on the sentence it is asked about. */
const judgeReply = (sentence: string): string =>
  sentence.includes("never") ? "UNSUPPORTED." :
  sentence.includes("ships") ? "Partially supported: the passage says nothing about ships." :
  sentence.includes("harbour") ? "Hard to say from here." :
  "SUPPORTED"

const chatAt = (url: string, model?: string) => Chat.layer({ model }).pipe(Layer.provide(clientLayer(url, { apiKey: "sk-test" })))

describe("AnswerCheck.judge (a chat model at the HTTP edge)", () => {
  it("reads verdicts in the words models use", () => {
    expect(AnswerCheck.readVerdict("SUPPORTED")).toBe("supported")
    expect(AnswerCheck.readVerdict("The sentence is not supported by [1].")).toBe("unsupported")
    expect(AnswerCheck.readVerdict("Partially supported.")).toBe("partial")
    expect(AnswerCheck.readVerdict("unsupported")).toBe("unsupported")
    expect(AnswerCheck.readVerdict("I don't know")).toBe("unreadable")
  })

  it.scopedLive("asks once per cited sentence with its passages; the verdict overrides the lexical score, an unreadable reply keeps it", () =>
    Effect.gen(function*() {
      const server = yield* startServer((req) => {
        const body = req.json as { messages: Array<{ role: string; content: string }> }
        const user = body.messages.find((m) => m.role === "user")!.content
        const sentence = user.slice(user.lastIndexOf("Sentence: ") + 10)
        return { json: { choices: [{ index: 0, message: { role: "assistant", content: judgeReply(sentence) }, finish_reason: "stop" }] } }
      })
      const answer = {
        text: "Augustin Fresnel invented the lens in 1822 [1]. Fresnel never invented a lens in 1822 [1]. " +
          "The lens helped ships see the coast [1]. The harbour was dredged in 1910 [2]. Bananas grow in the tropics.",
        sources
      }
      const c = yield* AnswerCheck.judge(answer).pipe(Effect.provide(chatAt(server.url, "judge-1")))
      expect(c.method).toBe("judge")
      expect(c.model).toBe("judge-1")
      expect(c.sentences.map((s) => [s.status, s.verdict])).toEqual([
        ["supported", "supported"],
        ["unsupported", "unsupported"], // copies the words (lexically supported), reverses the meaning
        ["unsupported", "partial"],
        ["supported", "unreadable"], // the lexical status stays
        ["uncited", undefined] // no call
      ])
      expect(c.sentences[1]!.support).toBeGreaterThanOrEqual(AnswerCheck.defaultThreshold)
      expect(c).toMatchObject({ supported: 2, unsupported: 2, uncited: 1 })
      // four calls, each with the prompt, temperature 0, the model, the cited passage and the sentence without its marks
      expect(server.received.length).toBe(4)
      const first = server.received.map((r) => r.json as { model: string; temperature: number; messages: Array<{ role: string; content: string }> })
        .find((b) => b.messages[1]!.content.endsWith("Sentence: The harbour was dredged in 1910."))!
      expect(first.model).toBe("judge-1")
      expect(first.temperature).toBe(0)
      expect(first.messages[0]).toEqual({ role: "system", content: AnswerCheck.judgePrompt })
      expect(first.messages[1]!.content).toContain("[2] The harbour was dredged in 1910 so that steamships could dock at the quay.")
      expect(first.messages[1]!.content).not.toContain("Fresnel")
      const text = AnswerCheck.format(c)
      expect(text).toMatch(/^Check \(judged by judge-1\): 2 of 5 sentence\(s\) supported by their citations, 2 unsupported, 1 without citation$/m)
      expect(text).toContain("  partly supported (lexical ")
    }))

  it.scopedLive("no model is a ConfigurationError; a failing model is the chat service's ApiError, with no key in it", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({ status: 500, json: { error: { message: "boom" } } }))
      const answer = { text: "Augustin Fresnel invented the lens in 1822 [1].", sources }
      const none = yield* Effect.flip(AnswerCheck.judge(answer).pipe(Effect.provide(chatAt(server.url))))
      expect(none._tag).toBe("ConfigurationError")
      expect(none.message).toContain("EFFECT_RAG_CHAT_MODEL")
      const failed = yield* Effect.flip(AnswerCheck.judge(answer, { model: "m" }).pipe(Effect.provide(chatAt(server.url))))
      expect(failed._tag).toBe("ServerError") // one of the ApiError union
      expect(JSON.stringify(failed)).not.toContain("sk-test")
    }))
})
