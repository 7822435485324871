/**
 * Language detection with franc-min's models (trigram models of 82 languages), reported as an
 * ISO 639-1 code (`en`, `ja`, …) when there is one, else the ISO 639-3 code; "" when undetermined.
 *
 * The answer is franc's, computed faster. franc scores a sample against every model of its
 * script one model at a time (each sample trigram looked up in each model: about 0.5 ms a
 * document, a fifth of an ingest's main thread). Here the models of a script are turned once
 * into one table, trigram → its rank in every model, so each sample trigram is looked up once
 * and the distances of all languages are summed in one pass. Same trigrams (trigram-utils, as
 * franc), same script choice, same distance, same tie order: the same language
 * (`test/engines/language.test.ts` checks it against franc itself).
 */
import { clean } from "trigram-utils"
import { data } from "franc-min/data.js"
import { expressions } from "franc-min/expressions.js"
import { iso6393To1 } from "iso-639-3/iso6393-to-1.js"

/**
 * Characters of prose sampled. franc's cost grows with the number of distinct trigrams: 2,000
 * SciFact abstracts took 2.1 s of CPU whole (about 1,500 characters each), 0.95 s at 500
 * characters, with the same answers for all of them.
 */
const sampleLength = 640

/** franc's constants: the shortest text it judges (as called here), the longest it reads, the penalty of a trigram a model lacks. */
const minLength = 10
const maxLength = 2048
const maxDifference = 300

interface ScriptModels {
  readonly languages: ReadonlyArray<string>
  /** trigram → rank in each language's model (-1: not in it). */
  readonly ranks: Map<string, Int16Array>
}

let models: Map<string, ScriptModels> | undefined

const scriptModels = (): Map<string, ScriptModels> => {
  if (models !== undefined) return models
  models = new Map()
  for (const [script, languages] of Object.entries(data)) {
    const names = Object.keys(languages)
    const ranks = new Map<string, Int16Array>()
    names.forEach((name, i) => {
      languages[name]!.split("|").forEach((trigram, rank) => {
        let row = ranks.get(trigram)
        if (row === undefined) {
          row = new Int16Array(names.length).fill(-1)
          ranks.set(trigram, row)
        }
        row[i] = rank
      })
    })
    models.set(script, { languages: names, ranks })
  }
  return models
}

/** The script whose characters occur most in `value` (franc's choice: the first of equals). */
const topScript = (value: string): [string | undefined, number] => {
  let top: string | undefined
  let topCount = -1
  for (const [script, expression] of Object.entries(expressions)) {
    const count = (value.match(expression)?.length ?? 0) / value.length || 0
    if (count > topCount) {
      topCount = count
      top = script
    }
  }
  return [top, topCount]
}

/**
 * The trigrams of a value with their occurrences: trigram-utils' `asTuples` (the same cleaning
 * and padding) without its array of every trigram, dictionary object and sort (the distance is
 * a sum, so the order does not matter).
 */
const trigramCounts = (value: string): Map<string, number> => {
  const padded = ` ${clean(value)} `
  const counts = new Map<string, number>()
  for (let i = 0; i + 3 <= padded.length; i++) {
    const trigram = padded.slice(i, i + 3)
    counts.set(trigram, (counts.get(trigram) ?? 0) + 1)
  }
  return counts
}

/** franc's ISO 639-3 answer for a sample ("und" when undetermined). */
export const franc3 = (text: string): string => {
  if (text.length < minLength) return "und"
  const value = text.slice(0, maxLength)
  const [script, count] = topScript(value)
  const scriptModel = script === undefined ? undefined : scriptModels().get(script)
  if (scriptModel === undefined) return script === undefined || count === 0 ? "und" : script
  const { languages, ranks } = scriptModel
  const distances = new Float64Array(languages.length)
  trigramCounts(value).forEach((occurrences, trigram) => {
    const row = ranks.get(trigram)
    if (row === undefined) {
      for (let i = 0; i < distances.length; i++) distances[i]! += maxDifference
      return
    }
    for (let i = 0; i < distances.length; i++) {
      const rank = row[i]!
      distances[i]! += rank < 0 ? maxDifference : Math.abs(occurrences - rank - 1)
    }
  })
  let best = 0
  for (let i = 1; i < distances.length; i++) if (distances[i]! < distances[best]!) best = i
  return languages[best]!
}

/** The sample franc is given: prose of the text's start, markup and URLs blanked. */
export const languageSample = (text: string): string =>
  // tables, outline keys and URLs skew trigram statistics: prefer prose lines
  text
    .slice(0, 8 * sampleLength)
    .replace(/https?:\/\/\S+/g, " ")
    .replace(/[|#*_`>-]+/g, " ")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, sampleLength)

/** Detects the language of a text from a bounded sample of its prose. */
export const detectLanguage = (text: string): string => {
  const code = franc3(languageSample(text))
  if (code === "und") return ""
  return iso6393To1[code] ?? code
}
