// The field names a validation rule selects, checked against the schema when the CRD is
// written, as upstream's CEL type check finds them: `self.spec.replica` where the schema
// declares `replicas` fails the CRD with cel-go's "undefined field 'replica'" (at the
// selection's line and column, with the source line and a caret), instead of failing every
// object later. Only what the schema pins down is checked: objects with declared properties
// (a map, an object that keeps unknown fields, or a value of unknown type passes), through
// `self`, `oldSelf` and the variables of list macros; other type errors are not looked for.
import { parse } from "@bufbuild/cel";
import { escapeName } from "./rules";
import type { JSONSchemaProps } from "./schema";

type Node = { id: bigint; exprKind: { case?: string; value?: any } };

/** What a rule knows of a value: its schema, or nothing (dyn). */
type Known = JSONSchemaProps | undefined;

/** Fields every object at the root (or embedded resource) has, whatever its schema says. */
const RESOURCE_FIELDS = new Set(["apiVersion", "kind", "metadata"]);

function fieldOf(s: JSONSchemaProps, name: string, resource: boolean): { found: boolean; type: Known } {
  if (resource && RESOURCE_FIELDS.has(name)) return { found: true, type: undefined };
  for (const [k, p] of Object.entries(s.properties ?? {}))
    if (escapeName(k) === name) return { found: true, type: p };
  return { found: false, type: undefined };
}

/** Whether selecting a field of a value of this schema names one of its declared properties. */
function checksFields(s: Known): s is JSONSchemaProps {
  return (
    !!s &&
    typeof s === "object" &&
    !!s.properties &&
    s.additionalProperties === undefined &&
    !s["x-kubernetes-preserve-unknown-fields"]
  );
}

/** The value type of a map (additionalProperties), or of a list's items. */
const mapValue = (s: Known): Known =>
  s && typeof s.additionalProperties === "object" ? s.additionalProperties : undefined;

/**
 * The first undefined field the rule selects, in cel-go's words ("ERROR: <input>:L:C: ...",
 * then the source line and a caret), or undefined when every selection is declared.
 */
export function undefinedFieldError(
  rule: string,
  schema: JSONSchemaProps,
  root: boolean,
): string | undefined {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(rule);
  } catch {
    return undefined; // a syntax error is reported by the compile
  }
  const positions = parsed.sourceInfo?.positions ?? {};
  let found: { name: string; offset: number } | undefined;
  const resources = new Set<Known>();
  if (root) resources.add(schema);

  const typeOf = (node: Node | undefined, scope: Map<string, Known>): Known => {
    if (!node || found) return undefined;
    const { case: kind, value } = node.exprKind;
    switch (kind) {
      case "identExpr":
        if (value.name === "self" || value.name === "oldSelf") return schema;
        return scope.get(value.name);
      case "selectExpr": {
        const operand: Known = typeOf(value.operand, scope);
        if (found) return undefined;
        if (checksFields(operand)) {
          const f = fieldOf(
            operand,
            value.field,
            resources.has(operand) || !!operand["x-kubernetes-embedded-resource"],
          );
          if (!f.found) {
            found = { name: value.field, offset: Number(positions[String(node.id)] ?? 0) };
            return undefined;
          }
          return value.testOnly ? undefined : f.type;
        }
        return value.testOnly ? undefined : mapValue(operand);
      }
      case "callExpr": {
        if (value.target) typeOf(value.target, scope);
        const args: Known[] = (value.args ?? []).map((a: Node) => typeOf(a, scope));
        // an index into a list or map gives its element
        if (value.function === "_[_]") return args[0]?.items ?? mapValue(args[0]);
        return undefined;
      }
      case "listExpr":
        for (const e of value.elements ?? []) typeOf(e, scope);
        return undefined;
      case "structExpr":
        for (const e of value.entries ?? []) {
          if (e.keyKind?.case === "mapKey") typeOf(e.keyKind.value, scope);
          typeOf(e.value, scope);
        }
        return undefined;
      case "comprehensionExpr": {
        const range = typeOf(value.iterRange, scope);
        const inner = new Map(scope);
        // a list's variable is an item; a map's is a key (a string)
        inner.set(value.iterVar, range?.items);
        if (value.iterVar2) inner.set(value.iterVar2, range?.items ? undefined : mapValue(range));
        inner.set(value.accuVar, undefined);
        typeOf(value.accuInit, scope);
        typeOf(value.loopCondition, inner);
        typeOf(value.loopStep, inner);
        typeOf(value.result, inner);
        return undefined;
      }
      default:
        return undefined;
    }
  };
  typeOf(parsed.expr as Node | undefined, new Map());
  if (!found) return undefined;
  // line and column (1-based) of the selection, and the line it is on
  const before = rule.slice(0, found.offset);
  const line = before.split("\n").length;
  const lineStart = before.lastIndexOf("\n") + 1;
  const column = found.offset - lineStart + 1;
  const text = rule.slice(lineStart).split("\n")[0];
  return `ERROR: <input>:${line}:${column}: undefined field '${found.name}'\n | ${text}\n | ${".".repeat(column - 1)}^`;
}
