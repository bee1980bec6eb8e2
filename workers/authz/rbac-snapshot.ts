// One consistent view of the cluster's RBAC objects, indexed for fast decisions: bindings by
// subject (user, group, service account) for the cluster and per namespace, role rules by
// name with ClusterRole aggregation applied, and a small LRU of the rules each user holds in
// each namespace. Built from plain objects; knows nothing of the store.
import { type ClusterRoleLike, effectiveClusterRoleRules } from "../../api/rbac/aggregation";
import {
  appliesToUser,
  type PolicyRule,
  type RoleRef,
  type RuleUser,
  SA_PREFIX,
  type Subject,
} from "../../api/rbac/rules";
import type { KubeObject } from "../../api/types";

export interface RbacObjects {
  roles: KubeObject[];
  clusterRoles: KubeObject[];
  roleBindings: KubeObject[];
  clusterRoleBindings: KubeObject[];
}

interface Binding {
  kind: "ClusterRoleBinding" | "RoleBinding";
  name: string;
  namespace: string;
  roleRef: RoleRef;
  subjects: Subject[];
  order: number;
}

interface SubjectIndex {
  users: Map<string, Binding[]>;
  groups: Map<string, Binding[]>;
  /** by service account username (system:serviceaccount:ns:name) */
  serviceAccounts: Map<string, Binding[]>;
}

export interface SourcedRule {
  rule: PolicyRule;
  /** upstream's description of the binding, e.g. ClusterRoleBinding "x" of ClusterRole "y" to Group "z" */
  source: () => string;
}

export interface UserRules {
  rules: SourcedRule[];
  /** resolution errors (a binding to a role that does not exist) */
  errors: string[];
}

const newIndex = (): SubjectIndex => ({ users: new Map(), groups: new Map(), serviceAccounts: new Map() });

function push(map: Map<string, Binding[]>, key: string, b: Binding): void {
  const list = map.get(key);
  if (list) {
    if (list[list.length - 1] !== b) list.push(b);
  } else map.set(key, [b]);
}

function indexBinding(idx: SubjectIndex, b: Binding): void {
  for (const s of b.subjects) {
    if (!s || typeof s.name !== "string") continue;
    if (s.kind === "User") push(idx.users, s.name, b);
    else if (s.kind === "Group") push(idx.groups, s.name, b);
    else if (s.kind === "ServiceAccount") {
      const ns = s.namespace || b.namespace;
      if (ns) push(idx.serviceAccounts, `${SA_PREFIX}${ns}:${s.name}`, b);
    }
  }
}

function toBinding(o: KubeObject, kind: Binding["kind"], order: number): Binding | undefined {
  const ref = o.roleRef;
  if (!ref || typeof ref.name !== "string") return undefined;
  return {
    kind,
    name: o.metadata?.name ?? "",
    namespace: kind === "RoleBinding" ? (o.metadata?.namespace ?? "") : "",
    roleRef: ref,
    subjects: Array.isArray(o.subjects) ? o.subjects : [],
    order,
  };
}

function describeSubject(s: Subject, bindingNamespace: string): string {
  if (s.kind === "ServiceAccount")
    return `ServiceAccount ${JSON.stringify(`${s.name}/${s.namespace || bindingNamespace}`)}`;
  return `${s.kind} ${JSON.stringify(s.name)}`;
}

function describe(b: Binding, s: Subject): string {
  const what = b.kind === "RoleBinding" ? `${b.name}/${b.namespace}` : b.name;
  return `${b.kind} ${JSON.stringify(what)} of ${b.roleRef.kind} ${JSON.stringify(b.roleRef.name)} to ${describeSubject(s, b.namespace)}`;
}

class LRU<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(k: string): V | undefined {
    const v = this.map.get(k);
    if (v !== undefined) {
      this.map.delete(k);
      this.map.set(k, v);
    }
    return v;
  }
  set(k: string, v: V): void {
    this.map.delete(k);
    this.map.set(k, v);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value!);
  }
}

export class RbacSnapshot {
  private readonly clusterRoleRules: Map<string, PolicyRule[]>;
  private readonly roleRules = new Map<string, PolicyRule[]>();
  private readonly clusterIndex = newIndex();
  private readonly namespaceIndex = new Map<string, SubjectIndex>();
  private readonly cache = new LRU<UserRules>(512);
  readonly size: number;

  constructor(objs: RbacObjects) {
    this.clusterRoleRules = effectiveClusterRoleRules(objs.clusterRoles as ClusterRoleLike[]);
    for (const r of objs.roles) {
      const ns = r.metadata?.namespace ?? "";
      this.roleRules.set(`${ns}/${r.metadata?.name ?? ""}`, Array.isArray(r.rules) ? r.rules : []);
    }
    let order = 0;
    for (const o of objs.clusterRoleBindings) {
      const b = toBinding(o, "ClusterRoleBinding", order++);
      if (b) indexBinding(this.clusterIndex, b);
    }
    for (const o of objs.roleBindings) {
      const b = toBinding(o, "RoleBinding", order++);
      if (!b) continue;
      let idx = this.namespaceIndex.get(b.namespace);
      if (!idx) this.namespaceIndex.set(b.namespace, (idx = newIndex()));
      indexBinding(idx, b);
    }
    this.size =
      objs.roles.length +
      objs.clusterRoles.length +
      objs.roleBindings.length +
      objs.clusterRoleBindings.length;
  }

  /** The rules a role reference grants, or the error upstream's listers give for a missing role. */
  roleRefRules(ref: RoleRef, bindingNamespace: string): { rules?: PolicyRule[]; error?: string } {
    if (ref.kind === "ClusterRole") {
      const rules = this.clusterRoleRules.get(ref.name);
      return rules
        ? { rules }
        : { error: `clusterrole.rbac.authorization.k8s.io ${JSON.stringify(ref.name)} not found` };
    }
    if (ref.kind === "Role") {
      const rules = this.roleRules.get(`${bindingNamespace}/${ref.name}`);
      return rules
        ? { rules }
        : { error: `role.rbac.authorization.k8s.io ${JSON.stringify(ref.name)} not found` };
    }
    return { error: `unsupported role reference kind: ${JSON.stringify(ref.kind)}` };
  }

  private bindingsFor(idx: SubjectIndex | undefined, user: RuleUser): Binding[] {
    if (!idx) return [];
    const found = new Set<Binding>();
    for (const b of idx.users.get(user.name) ?? []) found.add(b);
    for (const g of user.groups) for (const b of idx.groups.get(g) ?? []) found.add(b);
    if (user.name.startsWith(SA_PREFIX))
      for (const b of idx.serviceAccounts.get(user.name) ?? []) found.add(b);
    return [...found].sort((a, b) => a.order - b.order);
  }

  /**
   * Every rule the user holds in `namespace` (cluster-wide bindings first, then the
   * namespace's RoleBindings; "" means cluster-wide only), as upstream's VisitRulesFor.
   */
  rulesFor(user: RuleUser, namespace: string): UserRules {
    const key = `${user.name}\u0000${user.groups.join("\u0001")}\u0000${namespace}`;
    const hit = this.cache.get(key);
    if (hit) return hit;
    const out: UserRules = { rules: [], errors: [] };
    const visit = (bindings: Binding[]) => {
      for (const b of bindings) {
        const subject = b.subjects.find((s) => appliesToUser(user, s, b.namespace));
        if (!subject) continue;
        const { rules, error } = this.roleRefRules(b.roleRef, b.namespace);
        if (error) {
          out.errors.push(error);
          continue;
        }
        let text: string | undefined;
        const source = () => (text ??= describe(b, subject));
        for (const rule of rules!) out.rules.push({ rule, source });
      }
    };
    visit(this.bindingsFor(this.clusterIndex, user));
    if (namespace) visit(this.bindingsFor(this.namespaceIndex.get(namespace), user));
    this.cache.set(key, out);
    return out;
  }
}
