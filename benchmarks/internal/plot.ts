/**
 * Plots for the benchmark reports: grouped horizontal bar charts and line charts (a value
 * against a size, e.g. documents/s against collection size) as standalone SVG (no dependency, no
 * fonts to load), written to `docs/plots/` so that `benchmarks/README.md` can show them. Every
 * benchmark that has a figure worth looking at calls `writeBarChart` or `writeLineChart` after it
 * has measured; nothing here measures anything.
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

export interface LineSeries {
  /** The series name (e.g. the pipeline); one colour per series. */
  readonly name: string
  /** The measured points; a size without a measurement is simply absent. */
  readonly points: ReadonlyArray<{ readonly x: number; readonly y: number }>
}

export interface LineChart {
  readonly title: string
  /** Label of the x axis (e.g. "documents"); the axis is logarithmic when `logX` (default true). */
  readonly xLabel: string
  /** Unit of the values, on the y axis (from 0) and after each value. */
  readonly unit: string
  readonly series: ReadonlyArray<LineSeries>
  readonly logX?: boolean
  readonly caption?: string
  /** Digits after the point in the value labels (default: 0 for values ≥ 100, else 2). */
  readonly digits?: number
}

const compact = (x: number): string =>
  x >= 1e6 && x % 1e5 === 0 ? `${x / 1e6}M` : x >= 1e3 && x % 100 === 0 ? `${x / 1e3}k` : String(x)

/** Renders a line chart (one polyline per series, every point labelled) as an SVG document. */
export const lineChart = (chart: LineChart): string => {
  const logX = chart.logX ?? true
  const xs = [...new Set(chart.series.flatMap((s) => s.points.map((p) => p.x)))].sort((a, b) => a - b)
  const maxY = Math.max(1e-12, ...chart.series.flatMap((s) => s.points.map((p) => p.y))) * 1.1
  const left = 70
  const plotWidth = 480
  const right = 110
  const top = 40
  const plotHeight = 260
  const fx = (x: number): number => {
    if (xs.length < 2) return left + plotWidth / 2
    const t = logX ? Math.log(x) : x
    const lo = logX ? Math.log(xs[0]!) : xs[0]!
    const hi = logX ? Math.log(xs[xs.length - 1]!) : xs[xs.length - 1]!
    return left + ((t - lo) / (hi - lo)) * plotWidth
  }
  const fy = (y: number): number => top + plotHeight - (y / maxY) * plotHeight
  const colour = (i: number) => PALETTE[i % PALETTE.length]!
  const out: Array<string> = []
  // y grid and ticks (5), the axes over them, x ticks (the measured sizes)
  for (let i = 0; i <= 5; i++) {
    const v = (maxY / 5) * i
    const y = fy(v)
    out.push(`<line x1="${left}" y1="${y.toFixed(1)}" x2="${left + plotWidth}" y2="${y.toFixed(1)}" stroke="#eeeeee"/>`)
    out.push(`<text x="${left - 6}" y="${(y + 4).toFixed(1)}" text-anchor="end">${escapeXml(format(v, chart.digits))}</text>`)
  }
  out.push(`<line x1="${left}" y1="${top + plotHeight}" x2="${left + plotWidth}" y2="${top + plotHeight}" stroke="#333333"/>`)
  out.push(`<line x1="${left}" y1="${top}" x2="${left}" y2="${top + plotHeight}" stroke="#333333"/>`)
  for (const x of xs) {
    const px = fx(x)
    out.push(`<line x1="${px.toFixed(1)}" y1="${top + plotHeight}" x2="${px.toFixed(1)}" y2="${top + plotHeight + 5}" stroke="#333333"/>`)
    out.push(`<text x="${px.toFixed(1)}" y="${top + plotHeight + 18}" text-anchor="middle">${escapeXml(compact(x))}</text>`)
  }
  out.push(`<text x="${left + plotWidth / 2}" y="${top + plotHeight + 36}" text-anchor="middle">${escapeXml(`${chart.xLabel}${logX ? " (log scale)" : ""}`)}</text>`)
  chart.series.forEach((s, i) => {
    const points = [...s.points].sort((a, b) => a.x - b.x)
    if (points.length > 1) {
      out.push(`<polyline fill="none" stroke="${colour(i)}" stroke-width="2" points="${points.map((p) => `${fx(p.x).toFixed(1)},${fy(p.y).toFixed(1)}`).join(" ")}"/>`)
    }
    for (const p of points) {
      out.push(
        `<circle cx="${fx(p.x).toFixed(1)}" cy="${fy(p.y).toFixed(1)}" r="3" fill="${colour(i)}"><title>${
          escapeXml(`${s.name} at ${compact(p.x)}: ${format(p.y, chart.digits)} ${chart.unit}`)
        }</title></circle>`,
        `<text x="${(fx(p.x) + 5).toFixed(1)}" y="${(fy(p.y) - 5).toFixed(1)}" font-size="10" fill="${colour(i)}">${escapeXml(format(p.y, chart.digits))}</text>`
      )
    }
    const ly = top + 10 + i * 18
    out.push(`<rect x="${left + plotWidth + 12}" y="${ly - 9}" width="12" height="12" fill="${colour(i)}"/>`)
    out.push(`<text x="${left + plotWidth + 28}" y="${ly + 1}">${escapeXml(s.name)}</text>`)
  })
  const width = left + plotWidth + right
  const captionY = top + plotHeight + 56
  const height = captionY + (chart.caption ? 10 : 0)
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${escapeXml(`${chart.title} (${chart.unit})`)}</text>`,
    ...out,
    chart.caption
      ? `<text x="${width / 2}" y="${captionY}" text-anchor="middle" font-size="10" fill="#555555">${escapeXml(chart.caption)}</text>`
      : "",
    `</svg>`,
    ""
  ].join("\n")
}

/** Writes a line chart to `docs/plots/<name>.svg` and returns the path. */
export const writeLineChart = (name: string, chart: LineChart, path = plotPath(name)): string => {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, lineChart(chart))
  return path
}
