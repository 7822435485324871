/**
 * Language detection with franc-min (trigram models of 82 languages), reported as an ISO 639-1
 * code (`en`, `ja`, …) when there is one, else the ISO 639-3 code; "" when undetermined.
 */
import { franc } from "franc-min"
import { iso6393To1 } from "iso-639-3/iso6393-to-1.js"

/**
 * Characters of prose given to franc. Its cost grows with the sample (trigrams compared with
 * every language model of the script): 2,000 SciFact abstracts took 2.1 s of CPU whole (about
 * 1,500 characters each), 0.95 s at 500 characters, with the same answers for all of them.
 */
const sampleLength = 640

/** Detects the language of a text from a bounded sample of its prose. */
export const detectLanguage = (text: string): string => {
  // tables, outline keys and URLs skew trigram statistics: prefer prose lines
  const sample = text
    .slice(0, 8 * sampleLength)
    .replace(/https?:\/\/\S+/g, " ")
    .replace(/[|#*_`>-]+/g, " ")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, sampleLength)
  const code = franc(sample, { minLength: 10 })
  if (code === "und") return ""
  return iso6393To1[code] ?? code
}
