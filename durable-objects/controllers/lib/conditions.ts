export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  lastUpdateTime?: string;
  lastHeartbeatTime?: string;
  lastProbeTime?: string | null;
}

/**
 * Sets a condition in a list (returns a new list). The transition time stays when the status
 * does not change; when status, reason and message are all unchanged the old entry stays.
 */
export function setCondition(list: Condition[] | undefined, c: Condition): Condition[] {
  const out = [...(list ?? [])];
  const i = out.findIndex((x) => x.type === c.type);
  if (i < 0) return [...out, c];
  const old = out[i];
  if (old.status === c.status && old.reason === c.reason && old.message === c.message) return out;
  out[i] =
    old.status === c.status && old.lastTransitionTime
      ? { ...c, lastTransitionTime: old.lastTransitionTime }
      : c;
  return out;
}

export function removeCondition(list: Condition[] | undefined, type: string): Condition[] {
  return (list ?? []).filter((c) => c.type !== type);
}

export function getCondition(list: Condition[] | undefined, type: string): Condition | undefined {
  return list?.find((c) => c.type === type);
}
