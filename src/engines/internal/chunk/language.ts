/**
 * Language detection with franc-min (trigram models of 82 languages), reported as an ISO 639-1
 * code (`en`, `ja`, …) when there is one, else the ISO 639-3 code; "" when undetermined.
 */
import { franc } from "franc-min"
import { iso6393To1 } from "iso-639-3/iso6393-to-1.js"

/** Detects the language of a text sample (the first 20,000 characters are used). */
export const detectLanguage = (text: string): string => {
  // tables, outline keys and URLs skew trigram statistics: prefer prose lines
  const sample = text
    .slice(0, 20_000)
    .replace(/https?:\/\/\S+/g, " ")
    .replace(/[|#*_`>-]+/g, " ")
  const code = franc(sample, { minLength: 10 })
  if (code === "und") return ""
  return iso6393To1[code] ?? code
}
