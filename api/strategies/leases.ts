// coordination.k8s.io/v1 leases.

import { field } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import { validateMeta } from "../validation/metadata";
import { ageColumn, column, nameColumn } from "./common";

export const leases: ResourceDef = {
  group: "coordination.k8s.io",
  version: "v1",
  resource: "leases",
  kind: "Lease",
  listKind: "LeaseList",
  singular: "lease",
  namespaced: true,
  verbs: STANDARD_VERBS,
  strategy: {
    validate: (obj, old) => {
      const causes = validateMeta(obj, old, { namespaced: true });
      const spec = obj.spec ?? {};
      if (typeof spec.leaseDurationSeconds === "number" && spec.leaseDurationSeconds <= 0)
        causes.push(
          field.invalid("spec.leaseDurationSeconds", spec.leaseDurationSeconds, "must be greater than 0"),
        );
      if (typeof spec.leaseTransitions === "number" && spec.leaseTransitions < 0)
        causes.push(
          field.invalid("spec.leaseTransitions", spec.leaseTransitions, "must be greater than or equal to 0"),
        );
      return causes;
    },
    columns: [
      nameColumn,
      column(
        "Holder",
        "string",
        "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.",
        (o) => o.spec?.holderIdentity ?? "",
      ),
      ageColumn,
    ],
    generation: false,
  },
};
