/**
 * Metadata filters: validation against the declared fields, compilation to a LanceDB (DataFusion
 * SQL) predicate with every value escaped, and evaluation in memory.
 *
 * Injection safety does not rest on escaping alone: field names are never taken from the
 * filter as text but looked up among the declared fields (anything else is refused), numbers
 * must be finite, and strings become single-quoted literals with `'` doubled, which is the only
 * escape DataFusion's SQL literals know (a backslash is an ordinary character there).
 */
import type { CollectionSpec, FieldType, Filter, Scalar } from "../VectorStore.js"
import { documentIdField } from "../VectorStore.js"

/** The column that stores a declared metadata field. */
export const fieldColumn = (field: string): string =>
  field === documentIdField ? "document_id" : field === "__id" ? "id" : `f_${field}`

const typeOf = (spec: CollectionSpec, field: string): FieldType | undefined =>
  field === documentIdField ? "string" : spec.fields?.[field]

const checkValue = (field: string, type: FieldType, v: Scalar): string | undefined => {
  if (v === null) return undefined
  if (type === "number") {
    return typeof v === "number" && Number.isFinite(v) ? undefined : `filter on ${field}: expected a finite number, got ${JSON.stringify(v)}`
  }
  return typeof v === type ? undefined : `filter on ${field}: expected a ${type}, got ${JSON.stringify(v)}`
}

/** Validates a filter against the spec; returns a message or undefined. */
export const validate = (spec: CollectionSpec, filter: Filter): string | undefined => {
  switch (filter._tag) {
    case "Compare": {
      const t = typeOf(spec, filter.field)
      if (t === undefined) return `filter field ${JSON.stringify(filter.field)} is not a declared metadata field of ${spec.name}`
      if (filter.value === null && filter.op !== "=" && filter.op !== "!=") return `filter on ${filter.field}: null only compares with = or !=`
      return checkValue(filter.field, t, filter.value)
    }
    case "In": {
      const t = typeOf(spec, filter.field)
      if (t === undefined) return `filter field ${JSON.stringify(filter.field)} is not a declared metadata field of ${spec.name}`
      if (filter.values.length === 0) return `filter on ${filter.field}: IN needs at least one value`
      for (const v of filter.values) {
        if (v === null) return `filter on ${filter.field}: IN does not take null`
        const m = checkValue(filter.field, t, v)
        if (m !== undefined) return m
      }
      return undefined
    }
    case "And":
    case "Or":
      if (filter.filters.length === 0) return `an empty ${filter._tag} filter`
      for (const f of filter.filters) {
        const m = validate(spec, f)
        if (m !== undefined) return m
      }
      return undefined
    case "Not":
      return validate(spec, filter.filter)
  }
}

/** A SQL literal of a validated value. */
export const literal = (v: Scalar): string => {
  if (v === null) return "NULL"
  if (typeof v === "number") return Number.isInteger(v) ? v.toFixed(0) : v.toPrecision(17)
  // booleans are stored as Int8 0/1 by the LanceDB adapter
  if (typeof v === "boolean") return v ? "1" : "0"
  // Control characters are kept (they are data); only the quote needs doubling.
  return `'${v.replace(/'/g, "''")}'`
}

/** Quotes a column name (always one of ours: `document_id` or `f_<declared field>`). */
const column = (field: string): string => "`" + fieldColumn(field) + "`"

/** Compiles a validated filter to a LanceDB predicate. */
export const toSql = (filter: Filter): string => {
  switch (filter._tag) {
    case "Compare":
      if (filter.value === null) return `(${column(filter.field)} IS ${filter.op === "=" ? "" : "NOT "}NULL)`
      return `(${column(filter.field)} ${filter.op === "!=" ? "<>" : filter.op} ${literal(filter.value)})`
    case "In":
      return `(${column(filter.field)} IN (${filter.values.map(literal).join(", ")}))`
    case "And":
      return `(${filter.filters.map(toSql).join(" AND ")})`
    case "Or":
      return `(${filter.filters.map(toSql).join(" OR ")})`
    case "Not":
      return `(NOT ${toSql(filter.filter)})`
  }
}

/**
 * Evaluates a validated filter on a chunk's values with SQL's three-valued logic collapsed as
 * LanceDB does in a WHERE clause: a comparison with a missing (null) value is not a match, and
 * neither is its negation.
 */
export const matches = (filter: Filter, get: (field: string) => Scalar | undefined): boolean => {
  const ev = (f: Filter): boolean | null => {
    switch (f._tag) {
      case "Compare": {
        const v = get(f.field) ?? null
        if (f.value === null) return f.op === "=" ? v === null : v !== null
        if (v === null) return null
        switch (f.op) {
          case "=": return v === f.value
          case "!=": return v !== f.value
          case "<": return v < f.value
          case "<=": return v <= f.value
          case ">": return v > f.value
          case ">=": return v >= f.value
        }
        return null
      }
      case "In": {
        const v = get(f.field) ?? null
        return v === null ? null : f.values.includes(v)
      }
      case "And": {
        let unknown = false
        for (const g of f.filters) {
          const r = ev(g)
          if (r === false) return false
          if (r === null) unknown = true
        }
        return unknown ? null : true
      }
      case "Or": {
        let unknown = false
        for (const g of f.filters) {
          const r = ev(g)
          if (r === true) return true
          if (r === null) unknown = true
        }
        return unknown ? null : false
      }
      case "Not": {
        const r = ev(f.filter)
        return r === null ? null : !r
      }
    }
  }
  return ev(filter) === true
}
