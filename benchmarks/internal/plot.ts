/**
 * Plots for the benchmark reports: grouped horizontal bar charts as standalone SVG (no
 * dependency, no fonts to load), written to `docs/plots/` so that `benchmarks/README.md` can show
 * them. Every benchmark that has a figure worth looking at calls `writeBarChart` after it has
 * measured; nothing here measures anything.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { packageRoot } from "../../src/internal/shared.js"

export interface Bar {
  /** The series (e.g. the library) this bar belongs to; one colour per series. */
  readonly series: string
  readonly value: number
}

export interface BarGroup {
  /** The group label (e.g. a format or a stage). */
  readonly label: string
  readonly bars: ReadonlyArray<Bar>
}

export interface BarChart {
  readonly title: string
  /** Unit of the values, printed on the axis and after each value (e.g. "ms", "docs/s", "F1"). */
  readonly unit: string
  readonly groups: ReadonlyArray<BarGroup>
  /** A note under the chart: the command and machine that produced the figures. */
  readonly caption?: string
  /** Digits after the point in the value labels (default: 0 for values ≥ 100, else 2). */
  readonly digits?: number
}

const PALETTE = ["#3366cc", "#dc6e28", "#2e9d5b", "#9b59b6", "#c0392b", "#7f8c8d", "#d4ac0d", "#16a085"]

const escapeXml = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

const format = (value: number, digits: number | undefined): string =>
  value.toFixed(digits ?? (Math.abs(value) >= 100 ? 0 : 2))

/** Renders a grouped horizontal bar chart as an SVG document. */
export const barChart = (chart: BarChart): string => {
  const series = [...new Set(chart.groups.flatMap((g) => g.bars.map((b) => b.series)))]
  const colour = (name: string) => PALETTE[series.indexOf(name) % PALETTE.length]!
  const max = Math.max(1e-12, ...chart.groups.flatMap((g) => g.bars.map((b) => b.value)))
  const labelWidth = 170
  const plotWidth = 420
  const valueWidth = 90
  const barHeight = 16
  const groupGap = 12
  const top = 40
  const legendHeight = 22
  const rows: Array<string> = []
  let y = top
  for (const group of chart.groups) {
    const groupHeight = group.bars.length * barHeight
    rows.push(
      `<text x="${labelWidth - 8}" y="${y + groupHeight / 2 + 4}" text-anchor="end" font-weight="bold">${
        escapeXml(group.label)
      }</text>`
    )
    for (const bar of group.bars) {
      const width = Math.max(1, (bar.value / max) * plotWidth)
      rows.push(
        `<rect x="${labelWidth}" y="${y + 1}" width="${width.toFixed(1)}" height="${barHeight - 2}" fill="${
          colour(bar.series)
        }"><title>${escapeXml(`${bar.series}: ${format(bar.value, chart.digits)} ${chart.unit}`)}</title></rect>`,
        `<text x="${labelWidth + width + 4}" y="${y + barHeight - 4}">${
          escapeXml(format(bar.value, chart.digits))
        }</text>`
      )
      y += barHeight
    }
    y += groupGap
  }
  const legendY = y + 4
  const legend = series.map((name, i) => {
    const x = labelWidth + i * 130
    return `<rect x="${x}" y="${legendY}" width="12" height="12" fill="${colour(name)}"/>` +
      `<text x="${x + 16}" y="${legendY + 10}">${escapeXml(name)}</text>`
  })
  const captionY = legendY + legendHeight + 8
  const height = captionY + (chart.caption ? 10 : 0)
  const width = labelWidth + plotWidth + valueWidth
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${
      escapeXml(`${chart.title} (${chart.unit})`)
    }</text>`,
    ...rows,
    ...legend,
    chart.caption
      ? `<text x="${width / 2}" y="${captionY}" text-anchor="middle" font-size="10" fill="#555555">${
        escapeXml(chart.caption)
      }</text>`
      : "",
    `</svg>`,
    ""
  ].join("\n")
}

/** Where a benchmark's plot is written: `docs/plots/<name>.svg` (committed with the figures). */
export const plotPath = (name: string): string => join(packageRoot(), "docs", "plots", `${name}.svg`)

/** Writes a bar chart to `docs/plots/<name>.svg` and returns the path. */
export const writeBarChart = (name: string, chart: BarChart, path = plotPath(name)): string => {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, barChart(chart))
  return path
}
