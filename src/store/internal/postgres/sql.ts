/**
 * SQL building for the PostgreSQL adapter: quoted identifiers, the tables of a collection, the
 * typed columns of its declared fields, bound parameters and the compilation of a filter (every
 * value a bound parameter, every column name from the spec).
 */
import * as Filters from "../filter.js"
import { type CollectionSpec, documentIdField, type FieldType, type Filter, type Scalar } from "../../VectorStore.js"

/** pgvector's largest dimension an HNSW index on a `vector` column takes. */
export const maxIndexedDimension = 2000

/** The names a schema may have (the adapter quotes it, but accepts only plain names). */
export const schemaPattern = /^[a-z_][a-z0-9_]{0,62}$/

/** A quoted identifier of ours (checked names and numbered tables only). */
export const ident = (name: string): string => `"${name.replace(/"/g, "\"\"")}"`

/** The qualified tables of a schema and of one of its collections. */
export interface Tables {
  /** The quoted schema. */
  readonly schema: string
  /** `<schema>.collections`: each collection's spec and full-text statistics. */
  readonly collections: string
  /** `<schema>.chunks_<id>`. */
  readonly chunks: string
  /** `<schema>.postings_<id>`. */
  readonly postings: string
}

/** The tables of collection `id` in `schema`. */
export const tablesOf = (schema: string, id: number): Tables => {
  const s = ident(schema)
  return {
    schema: s,
    collections: `${s}.collections`,
    chunks: `${s}.${ident(`chunks_${id}`)}`,
    postings: `${s}.${ident(`postings_${id}`)}`
  }
}

/** The declared fields in column order: `f0`, `f1`, ... by sorted field name. */
export const fieldColumns = (spec: CollectionSpec): ReadonlyArray<readonly [field: string, type: FieldType, column: string]> =>
  Object.keys(spec.fields ?? {}).sort().map((f, i) => [f, spec.fields![f]!, `f${i}`] as const)

/** The column type of a declared field. */
export const sqlType = (t: FieldType): string => (t === "number" ? "double precision" : t === "boolean" ? "boolean" : "text")

/** A vector as pgvector's text form, with float32 precision. */
export const vectorLiteral = (v: ArrayLike<number>): string => `[${Array.from(Float32Array.from(v as ArrayLike<number>)).join(",")}]`

/** Bound parameters of one statement. */
export class Params {
  readonly values: Array<unknown> = []
  bind = (v: unknown): string => {
    this.values.push(v)
    return `$${this.values.length}`
  }
}

/** A result or the message of what is wrong (`Left`). */
export type Outcome<E, A> = { readonly _tag: "Left"; readonly left: E } | { readonly _tag: "Right"; readonly right: A }

/**
 * Compiles a filter to a SQL condition on the chunks table. Values go to `bind` (which returns
 * its `$n` placeholder); a field is `documentId` or a declared field, whose column comes from
 * the spec: a name that is neither is refused, never spliced. Comparisons of missing values are
 * not matches, nor are their negations (SQL's three-valued logic in a `WHERE`, as the other
 * adapters evaluate it). Strings compare in code-point order (`COLLATE "C"`).
 */
export const compileFilter = (
  spec: CollectionSpec,
  filter: Filter,
  bind: (value: Scalar) => string
): Outcome<string, string> => {
  const problem = Filters.validate(spec, filter)
  if (problem !== undefined) return { _tag: "Left", left: problem }
  const columns = new Map<string, readonly [string, FieldType]>([[documentIdField, ["document_id", "string"]]])
  for (const [f, t, c] of fieldColumns(spec)) columns.set(f, [c, t])
  const col = (field: string): readonly [string, FieldType] => columns.get(field)!
  const go = (f: Filter): string => {
    switch (f._tag) {
      case "Compare": {
        const [c, t] = col(f.field)
        if (f.value === null) return `(${ident(c)} IS ${f.op === "=" ? "" : "NOT "}NULL)`
        const op = f.op === "!=" ? "<>" : f.op
        const collate = t === "string" && op !== "=" && op !== "<>" ? ` COLLATE "C"` : ""
        return `(${ident(c)}${collate} ${op} ${bind(f.value)})`
      }
      case "In": {
        const [c] = col(f.field)
        return `(${ident(c)} IN (${f.values.map(bind).join(", ")}))`
      }
      case "And":
        return `(${f.filters.map(go).join(" AND ")})`
      case "Or":
        return `(${f.filters.map(go).join(" OR ")})`
      case "Not":
        return `(NOT ${go(f.filter)})`
    }
  }
  return { _tag: "Right", right: go(filter) }
}
