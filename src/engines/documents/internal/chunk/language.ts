/**
 * Language detection with franc-min's models (trigram models of 82 languages), reported as an
 * ISO 639-1 code (`en`, `ja`, …) when there is one, else the ISO 639-3 code; "" when undetermined.
 *
 * The answer is franc's, computed faster. franc scores a sample against every model of its
 * script one model at a time (each sample trigram looked up in each model: about 0.5 ms a
 * document, a fifth of an ingest's main thread). Here the models of a script are turned once
 * into one table, trigram → the models that have it with its rank there, so each sample trigram
 * is looked up once and touches only those models (every other model adds the fixed penalty),
 * a trigram of ASCII letters and spaces is found by its index in a dense table (no substring, no
 * hash: about half the CPU on SciFact abstracts), and an all-ASCII sample finds its script in
 * one pass. Same trigrams (trigram-utils' cleaning,
 * as franc), same script choice, same distance, same tie order: the same language
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

/**
 * A trigram of a script's models: the (language index, rank) pairs of the models that have it,
 * and its occurrences in the sample being scored (`sample`: which one; a count left by an
 * earlier sample is reset on first sight, so no per-sample map of counts is built).
 */
interface Trigram {
  readonly pairs: Int16Array
  occurrences: number
  sample: number
}

interface ScriptModels {
  readonly languages: ReadonlyArray<string>
  readonly trigrams: Map<string, Trigram>
  /** The trigrams of ASCII letters and spaces, by {@link denseId}: no string, no hash to find them. */
  readonly dense: Array<Trigram | undefined>
}

/** A cleaned character's code among space and `a`-`z` (0-26), else -1. */
const denseCode = (c: number): number => (c === 32 ? 0 : c >= 97 && c <= 122 ? c - 96 : -1)
const denseSize = 27 ** 3

/** The dense id of the trigram at `i` of `s` when its characters are spaces and `a`-`z`, else -1. */
const denseId = (s: string, i: number): number => {
  const a = denseCode(s.charCodeAt(i))
  const b = denseCode(s.charCodeAt(i + 1))
  const c = denseCode(s.charCodeAt(i + 2))
  return a < 0 || b < 0 || c < 0 ? -1 : (a * 27 + b) * 27 + c
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
    // sparse rows: a trigram is in a few of a script's models, and a model that lacks it costs
    // the same fixed penalty as any other
    const trigrams = new Map<string, Trigram>()
    for (const [trigram, row] of ranks) {
      const pairs: Array<number> = []
      row.forEach((rank, i) => (rank >= 0 ? pairs.push(i, rank) : undefined))
      trigrams.set(trigram, { pairs: Int16Array.from(pairs), occurrences: 0, sample: 0 })
    }
    const dense = new Array<Trigram | undefined>(denseSize).fill(undefined)
    for (const [trigram, entry] of trigrams) {
      const id = trigram.length === 3 ? denseId(trigram, 0) : -1
      if (id >= 0) dense[id] = entry
    }
    models.set(script, { languages: names, trigrams, dense })
  }
  return models
}

const asciiOnly = /^[\x00-\x7f]*$/

/** ASCII letters: the only ASCII characters any script expression matches (Latin's). */
const asciiLetters = (value: string): number => {
  let n = 0
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i) | 0x20
    if (c >= 0x61 && c <= 0x7a) n++
  }
  return n
}

/** The number of matches of a global `expression` in `value`, without building the array of them. */
const countMatches = (expression: RegExp, value: string): number => {
  expression.lastIndex = 0
  let n = 0
  while (expression.test(value)) n++
  expression.lastIndex = 0
  return n
}

let asciiChecked: boolean | undefined

/** Whether, of ASCII characters, the script expressions match only Latin's letters (checked once over all 128). */
const onlyLatinMatchesAscii = (): boolean =>
  asciiChecked ??= Object.entries(expressions).every(([script, expression]) => {
    for (let c = 0; c < 128; c++) {
      const ch = String.fromCharCode(c)
      const letter = (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a
      if ((countMatches(expression, ch) > 0) !== (script === "Latin" && letter)) return false
    }
    return true
  })

const asciiRuns = /[\x00-\x7f]+/g

/**
 * The script whose characters occur most in `value` (franc's choice: the first of equals). Of
 * ASCII characters the script expressions match only Latin's letters (checked once), so the
 * ASCII letters are counted in one pass and the expressions run over the rest only: `value`
 * with each run of ASCII replaced by a space (which no expression matches, and which keeps
 * apart what was apart). An all-ASCII sample (most prose in Latin script) needs no expression.
 * Matches are counted, not collected (`match` built an array of every letter of the sample).
 */
const topScript = (value: string): [string | undefined, number] => {
  let top: string | undefined
  let topCount = -1
  const ascii = asciiOnly.test(value)
  const split = !ascii && onlyLatinMatchesAscii()
  const rest = split ? value.replace(asciiRuns, " ") : value
  const latinAscii = ascii || split ? asciiLetters(value) : 0
  for (const [script, expression] of Object.entries(expressions)) {
    const matches = (script === "Latin" ? latinAscii : 0) + (ascii ? 0 : countMatches(expression, rest))
    const count = matches / value.length || 0
    if (count > topCount) {
      topCount = count
      top = script
    }
  }
  return [top, topCount]
}

/** The number of samples scored so far (see {@link Trigram}). */
let samples = 0
/** The sample in which a dense trigram no model has was last seen (to count it once a sample). */
const denseSeen = new Float64Array(denseSize)

/**
 * The trigrams of a value (trigram-utils' `asTuples`: the same cleaning and padding) that the
 * script's models have, with their occurrences, and the number of distinct trigrams in all.
 * One lookup per trigram: the models' entry counts its occurrences (no array of every trigram,
 * no dictionary, no sort: the distance is a sum, so the order does not matter).
 */
const trigramsOf = (value: string, model: ScriptModels): { readonly known: Array<Trigram>; readonly distinct: number } => {
  const padded = ` ${clean(value)} `
  const sample = ++samples
  const known: Array<Trigram> = []
  const others = new Set<string>()
  let denseOthers = 0
  for (let i = 0; i + 3 <= padded.length; i++) {
    const id = denseId(padded, i)
    let entry: Trigram | undefined
    if (id >= 0) {
      entry = model.dense[id]
      if (entry === undefined) {
        if (denseSeen[id] !== sample) {
          denseSeen[id] = sample
          denseOthers++
        }
        continue
      }
    } else {
      const trigram = padded.slice(i, i + 3)
      entry = model.trigrams.get(trigram)
      if (entry === undefined) {
        others.add(trigram)
        continue
      }
    }
    if (entry.sample !== sample) {
      entry.sample = sample
      entry.occurrences = 0
      known.push(entry)
    }
    entry.occurrences++
  }
  return { known, distinct: known.length + others.size + denseOthers }
}

/** franc's ISO 639-3 answer for a sample ("und" when undetermined). */
export const franc3 = (text: string): string => {
  if (text.length < minLength) return "und"
  const value = text.slice(0, maxLength)
  const [script, count] = topScript(value)
  const scriptModel = script === undefined ? undefined : scriptModels().get(script)
  if (scriptModel === undefined) return script === undefined || count === 0 ? "und" : script
  const languages = scriptModel.languages
  // every trigram costs each model the penalty, except models that have it: |occurrences - rank - 1|
  const { distinct, known } = trigramsOf(value, scriptModel)
  const distances = new Float64Array(languages.length).fill(distinct * maxDifference)
  for (const { occurrences, pairs } of known) {
    for (let j = 0; j < pairs.length; j += 2) {
      distances[pairs[j]!]! += Math.abs(occurrences - pairs[j + 1]! - 1) - maxDifference
    }
  }
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
