// An nftables table as data: its sets and maps, its chains and their rules. The proxier
// compiles the whole desired table on every sync, then renders either the full table (one
// transaction that deletes and recreates it) or only what changed since the last table the
// kernel accepted (one transaction too: chains flushed and refilled, map elements added and
// removed, chains and sets that are gone deleted). Either way nft applies all or nothing.

export interface SetDef {
  /** the declaration inside the braces, e.g. "type ipv4_addr; flags dynamic,timeout; timeout 10800s;" */
  decl: string;
  /** elements, each as nft writes one ("10.96.0.1 . tcp . 443 : goto svc-x") */
  elements: string[];
  /** a set the datapath fills (session affinity): never flushed, its elements are not ours */
  dynamic?: boolean;
}

export interface ChainDef {
  /** a base chain's hook line, e.g. "type nat hook prerouting priority -100; policy accept;" */
  hook?: string;
  rules: string[];
}

export interface Ruleset {
  family: "ip";
  table: string;
  sets: Map<string, SetDef>;
  chains: Map<string, ChainDef>;
}

export function emptyRuleset(table: string): Ruleset {
  return { family: "ip", table, sets: new Map(), chains: new Map() };
}

/**
 * A chain or set name as nft 1.0.6 reads it: unquoted (it refuses quoted names), letters,
 * digits and / _ . - only, starting with a letter. The compiler builds names from those alone.
 */
export const q = (name: string): string => name;

function setLines(t: string, name: string, s: SetDef): string[] {
  const kind = /:/.test(s.decl.split(";")[0] ?? "") ? "map" : "set";
  return [`add ${kind} ${t} ${q(name)} { ${s.decl} }`];
}

function elementLines(t: string, name: string, elements: string[], verb: "add" | "delete"): string[] {
  const out: string[] = [];
  // large element lists in pieces: one nft line per few hundred elements keeps the parser fast
  for (let i = 0; i < elements.length; i += 500)
    out.push(`${verb} element ${t} ${q(name)} { ${elements.slice(i, i + 500).join(", ")} }`);
  return out;
}

function chainLines(t: string, name: string, c: ChainDef): string[] {
  return [c.hook ? `add chain ${t} ${q(name)} { ${c.hook} }` : `add chain ${t} ${q(name)}`];
}

function ruleLines(t: string, name: string, c: ChainDef): string[] {
  return c.rules.map((r) => `add rule ${t} ${q(name)} ${r}`);
}

/** The whole table, replacing whatever table of that name exists (one transaction). */
export function renderFull(r: Ruleset): string {
  const t = `${r.family} ${r.table}`;
  const out = [`add table ${t}`, `delete table ${t}`, `add table ${t}`];
  // sets and chains first, so rules and elements can refer to any of them
  for (const [name, s] of r.sets) out.push(...setLines(t, name, s));
  for (const [name, c] of r.chains) out.push(...chainLines(t, name, c));
  for (const [name, c] of r.chains) out.push(...ruleLines(t, name, c));
  for (const [name, s] of r.sets) if (!s.dynamic) out.push(...elementLines(t, name, s.elements, "add"));
  return `${out.join("\n")}\n`;
}

const sameRules = (a: ChainDef, b: ChainDef) =>
  a.hook === b.hook && a.rules.length === b.rules.length && a.rules.every((x, i) => x === b.rules[i]);

/**
 * What turns table `prev` (the one the kernel holds) into `next`; "" when nothing differs.
 * Order matters inside the transaction: references to a chain or set are removed (chains
 * flushed, elements deleted) before it is deleted, and things are created before use.
 */
export function renderDiff(prev: Ruleset, next: Ruleset): string {
  const t = `${next.family} ${next.table}`;
  const flush: string[] = [];
  const delElements: string[] = [];
  const delChains: string[] = [];
  const delSets: string[] = [];
  const addSets: string[] = [];
  const addChains: string[] = [];
  const addRules: string[] = [];
  const addElements: string[] = [];
  for (const [name, c] of prev.chains) {
    const n = next.chains.get(name);
    if (!n) {
      flush.push(`flush chain ${t} ${q(name)}`);
      delChains.push(`delete chain ${t} ${q(name)}`);
    } else if (!sameRules(c, n)) {
      if (c.hook !== n.hook) throw new Error(`base chain ${name} changed its hook`);
      flush.push(`flush chain ${t} ${q(name)}`);
      addRules.push(...ruleLines(t, name, n));
    }
  }
  for (const [name, c] of next.chains)
    if (!prev.chains.has(name)) {
      addChains.push(...chainLines(t, name, c));
      addRules.push(...ruleLines(t, name, c));
    }
  for (const [name, s] of prev.sets) {
    const n = next.sets.get(name);
    if (!n || n.decl !== s.decl) {
      if (!s.dynamic) delElements.push(...elementLines(t, name, s.elements, "delete"));
      delSets.push(`delete ${/:/.test(s.decl.split(";")[0] ?? "") ? "map" : "set"} ${t} ${q(name)}`);
      continue;
    }
    if (s.dynamic) continue;
    const had = new Set(s.elements);
    const want = new Set(n.elements);
    delElements.push(
      ...elementLines(
        t,
        name,
        s.elements.filter((e) => !want.has(e)),
        "delete",
      ),
    );
    addElements.push(
      ...elementLines(
        t,
        name,
        n.elements.filter((e) => !had.has(e)),
        "add",
      ),
    );
  }
  for (const [name, s] of next.sets) {
    const p = prev.sets.get(name);
    if (p && p.decl === s.decl) continue;
    addSets.push(...setLines(t, name, s));
    if (!s.dynamic) addElements.push(...elementLines(t, name, s.elements, "add"));
  }
  const out = [
    ...delElements.filter((l) => !/\{ {2}\}$/.test(l)),
    ...flush,
    ...delChains,
    ...delSets,
    ...addSets,
    ...addChains,
    ...addRules,
    ...addElements,
  ];
  return out.length ? `${out.join("\n")}\n` : "";
}

/** Counts for logs and benchmarks. */
export function rulesetSize(r: Ruleset): { chains: number; rules: number; elements: number } {
  let rules = 0;
  let elements = 0;
  for (const c of r.chains.values()) rules += c.rules.length;
  for (const s of r.sets.values()) elements += s.elements.length;
  return { chains: r.chains.size, rules, elements };
}
