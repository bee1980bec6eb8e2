// Every controller the manager runs, in one list.
import type { Controller } from "./runtime/controller";

export const CONTROLLERS: Controller[] = [];
