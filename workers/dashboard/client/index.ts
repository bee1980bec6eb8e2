// The dashboard's client script: the parts below, in one strict-mode function scope.
import { APP } from "./app";
import { CORE } from "./core";
import { FLOW } from "./flow";
import { PAGES } from "./pages";
import { POD_PAGE } from "./pod-page";

export const CLIENT_SCRIPT = `(function () {
"use strict";
${CORE}
${FLOW}
${APP}
${PAGES}
${POD_PAGE}
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
`;

/** Only the flow logic, for tests that run it outside a browser. */
export const FLOW_SCRIPT = FLOW;
