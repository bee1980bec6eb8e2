// core/v1 serviceaccounts.

import { field } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import { validateMeta } from "../validation/metadata";
import { ageColumn, column, nameColumn } from "./common";

export const serviceaccounts: ResourceDef = {
  group: "",
  version: "v1",
  resource: "serviceaccounts",
  kind: "ServiceAccount",
  listKind: "ServiceAccountList",
  singular: "serviceaccount",
  namespaced: true,
  shortNames: ["sa"],
  verbs: STANDARD_VERBS,
  subresources: {
    token: { kind: "TokenRequest", group: "authentication.k8s.io", version: "v1", verbs: ["create"] },
  },
  strategy: {
    validate: (obj, old) => {
      const causes = validateMeta(obj, old, { namespaced: true });
      (Array.isArray(obj.secrets) ? obj.secrets : []).forEach((s: any, i: number) => {
        if (!s?.name) causes.push(field.required(`secrets[${i}].name`));
      });
      return causes;
    },
    columns: [
      nameColumn,
      column(
        "Secrets",
        "string",
        'Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a "kubernetes.io/enforce-mountable-secrets" annotation set to "true". The "kubernetes.io/enforce-mountable-secrets" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret',
        (o) => (Array.isArray(o.secrets) ? o.secrets.length : 0),
      ),
      ageColumn,
    ],
    generation: false,
  },
};
