// Descriptions and types of the query parameters the OpenAPI documents list.

export const QUERY_PARAMS: Record<string, { type: string; description: string }> = {
  allowWatchBookmarks: {
    type: "boolean",
    description: 'allowWatchBookmarks requests watch events with type "BOOKMARK".',
  },
  continue: {
    type: "string",
    description: "The continue option should be set when retrieving more results from the server.",
  },
  dryRun: {
    type: "string",
    description: "When present, indicates that modifications should not be persisted. Valid value: All.",
  },
  fieldManager: {
    type: "string",
    description: "fieldManager is a name associated with the actor or entity that is making these changes.",
  },
  fieldSelector: {
    type: "string",
    description: "A selector to restrict the list of returned objects by their fields.",
  },
  fieldValidation: {
    type: "string",
    description:
      "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict",
  },
  force: {
    type: "boolean",
    description: 'Force is going to "force" Apply requests. It must be unset for non-apply patch requests.',
  },
  gracePeriodSeconds: {
    type: "integer",
    description: "The duration in seconds before the object should be deleted.",
  },
  labelSelector: {
    type: "string",
    description: "A selector to restrict the list of returned objects by their labels.",
  },
  limit: {
    type: "integer",
    description: "limit is a maximum number of responses to return for a list call.",
  },
  orphanDependents: { type: "boolean", description: "Deprecated: please use the PropagationPolicy." },
  pretty: { type: "string", description: "If 'true', then the output is pretty printed." },
  propagationPolicy: { type: "string", description: "Whether and how garbage collection will be performed." },
  resourceVersion: {
    type: "string",
    description: "resourceVersion sets a constraint on what resource versions a request may be served from.",
  },
  resourceVersionMatch: {
    type: "string",
    description: "resourceVersionMatch determines how resourceVersion is applied to list calls.",
  },
  sendInitialEvents: {
    type: "boolean",
    description: "`sendInitialEvents=true` may be set together with `watch=true`.",
  },
  timeoutSeconds: { type: "integer", description: "Timeout for the list/watch call." },
  watch: {
    type: "boolean",
    description:
      "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.",
  },
  container: { type: "string", description: "The container for which to stream logs or run a command." },
  follow: { type: "boolean", description: "Follow the log stream of the pod." },
  previous: { type: "boolean", description: "Return previous terminated container logs." },
  sinceSeconds: {
    type: "integer",
    description: "A relative time in seconds before the current time from which to show logs.",
  },
  tailLines: {
    type: "integer",
    description: "If set, the number of lines from the end of the logs to show.",
  },
  timestamps: {
    type: "boolean",
    description: "If true, add an RFC3339 timestamp at the beginning of every line of log output.",
  },
  command: { type: "string", description: "Command is the remote command to execute. argv array." },
  stdin: { type: "boolean", description: "Redirect the standard input stream of the pod for this call." },
  stdout: { type: "boolean", description: "Redirect the standard output stream of the pod for this call." },
  stderr: { type: "boolean", description: "Redirect the standard error stream of the pod for this call." },
  tty: {
    type: "boolean",
    description: "TTY if true indicates that a tty will be allocated for the exec call.",
  },
  ports: { type: "integer", description: "List of ports to forward." },
  path: { type: "string", description: "Path is the URL path to use for the current proxy request." },
};
