// Field sets as server-side apply tracks them: a tree of path elements in
// upstream's FieldsV1 spelling ("f:<field>", "k:<json key>", "v:<json value>",
// "i:<index>"), where a node is a member of the set itself or only leads to
// members below it. FieldsV1 writes a member that has children as ".": {}.

export interface FieldNode {
  member: boolean;
  children: Map<string, FieldNode>;
}

export type FieldPath = string[];

export function newNode(): FieldNode {
  return { member: false, children: new Map() };
}

export function child(node: FieldNode, pe: string): FieldNode {
  let c = node.children.get(pe);
  if (!c) {
    c = newNode();
    node.children.set(pe, c);
  }
  return c;
}

export function isEmpty(node: FieldNode | undefined): boolean {
  if (!node) return true;
  if (node.member) return false;
  for (const c of node.children.values()) if (!isEmpty(c)) return false;
  return true;
}

/** Drops branches that hold no member; returns the node for chaining. */
export function prune(node: FieldNode): FieldNode {
  for (const c of node.children.values()) prune(c);
  return dropEmptyChildren(node);
}

/**
 * Drops the children that are neither members nor lead to any: with children pruned
 * already, one look at each (set operations build bottom-up, so a full prune at every
 * level would walk each subtree once per ancestor).
 */
function dropEmptyChildren(node: FieldNode): FieldNode {
  for (const [k, c] of node.children) if (!c.member && c.children.size === 0) node.children.delete(k);
  return node;
}

export function cloneNode(node: FieldNode): FieldNode {
  const out = newNode();
  out.member = node.member;
  for (const [k, c] of node.children) out.children.set(k, cloneNode(c));
  return out;
}

export function union(a: FieldNode, b: FieldNode): FieldNode {
  const out = cloneNode(a);
  out.member ||= b.member;
  for (const [k, c] of b.children) {
    const mine = out.children.get(k);
    out.children.set(k, mine ? union(mine, c) : cloneNode(c));
  }
  return out;
}

/** Members of `a` that are not members of `b`. */
export function difference(a: FieldNode, b: FieldNode | undefined): FieldNode {
  const out = newNode();
  out.member = a.member && !b?.member;
  for (const [k, c] of a.children) out.children.set(k, difference(c, b?.children.get(k)));
  return dropEmptyChildren(out);
}

/** Members of both. */
export function intersection(a: FieldNode, b: FieldNode | undefined): FieldNode {
  const out = newNode();
  if (!b) return out;
  out.member = a.member && b.member;
  for (const [k, c] of a.children) out.children.set(k, intersection(c, b.children.get(k)));
  return dropEmptyChildren(out);
}

/** `a` without everything at or below each member of `gone`. */
export function withoutSubtrees(a: FieldNode, gone: FieldNode | undefined): FieldNode {
  if (!gone) return prune(cloneNode(a));
  if (gone.member) return newNode();
  const out = newNode();
  out.member = a.member;
  for (const [k, c] of a.children) out.children.set(k, withoutSubtrees(c, gone.children.get(k)));
  return dropEmptyChildren(out);
}

/** The set whose members are exactly these paths. */
export function pathsTree(paths: FieldPath[]): FieldNode {
  const root = newNode();
  for (const p of paths) {
    let n = root;
    for (const pe of p) n = child(n, pe);
    n.member = true;
  }
  return root;
}

export function lookup(node: FieldNode, path: FieldPath): FieldNode | undefined {
  let n: FieldNode | undefined = node;
  for (const pe of path) n = n?.children.get(pe);
  return n;
}

/** Every member path, parents before children. */
export function members(node: FieldNode, prefix: FieldPath = []): FieldPath[] {
  const out: FieldPath[] = node.member && prefix.length > 0 ? [prefix] : [];
  for (const [k, c] of sortedChildren(node)) out.push(...members(c, [...prefix, k]));
  return out;
}

const PE_RANK: Record<string, number> = { f: 1, k: 2, v: 3, i: 4 };

function peRank(pe: string): number {
  return pe === "." ? 0 : (PE_RANK[pe[0]] ?? 5);
}

function sortedChildren(node: FieldNode): [string, FieldNode][] {
  const out = [...node.children];
  if (out.length > 1) out.sort(([a], [b]) => peRank(a) - peRank(b) || (a < b ? -1 : a > b ? 1 : 0));
  return out;
}

/** The FieldsV1 JSON of a set. */
export function setToFields(node: FieldNode): Record<string, unknown> {
  return fieldsOf(node) ?? {};
}

/** FieldsV1 of a node, or undefined when it holds no member (one pass, bottom-up). */
function fieldsOf(node: FieldNode): Record<string, unknown> | undefined {
  const kids: [string, Record<string, unknown>][] = [];
  for (const [k, c] of sortedChildren(node)) {
    const f = fieldsOf(c);
    if (f) kids.push([k, f]);
  }
  if (!node.member && kids.length === 0) return undefined;
  const out: Record<string, unknown> = {};
  if (node.member && node.children.size > 0) out["."] = {};
  for (const [k, f] of kids) out[k] = f;
  return out;
}

/** Parses FieldsV1 JSON; anything unexpected is ignored. */
export function fieldsToSet(fields: unknown): FieldNode {
  const node = newNode();
  if (typeof fields !== "object" || fields === null || Array.isArray(fields)) return node;
  const entries = Object.entries(fields as Record<string, unknown>);
  if (entries.length === 0) node.member = true;
  for (const [k, v] of entries) {
    if (k === ".") node.member = true;
    else node.children.set(k, fieldsToSet(v));
  }
  return node;
}

export function fieldPE(name: string): string {
  return `f:${name}`;
}

/** `k:` element from key field values; fields are written in name order. */
export function keyPE(key: Record<string, unknown>): string {
  const names = Object.keys(key);
  // most lists have one key field (a container's name, a mount's path): no reordering to do
  if (names.length === 1) return `k:{${JSON.stringify(names[0])}:${JSON.stringify(key[names[0] as string])}}`;
  const sorted: Record<string, unknown> = {};
  for (const k of names.sort()) sorted[k] = key[k];
  return `k:${JSON.stringify(sorted)}`;
}

export function valuePE(value: unknown): string {
  return `v:${JSON.stringify(value)}`;
}

/** A path as upstream prints it: `.spec.containers[name="web"].image`. */
export function pathString(path: FieldPath): string {
  let out = "";
  for (const pe of path) {
    const body = pe.slice(2);
    switch (pe[0]) {
      case "f":
        out += `.${body}`;
        break;
      case "k": {
        try {
          const key = JSON.parse(body) as Record<string, unknown>;
          out += `[${Object.entries(key)
            .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
            .join(",")}]`;
        } catch {
          out += `[${body}]`;
        }
        break;
      }
      case "v":
        out += `[=${body}]`;
        break;
      case "i":
        out += `[${body}]`;
        break;
      default:
        out += pe;
    }
  }
  return out;
}
