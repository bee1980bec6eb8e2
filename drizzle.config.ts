import { defineConfig } from "drizzle-kit";

export default defineConfig({
  out: "./migrations",
  schema: "./durable-objects/store/schema.ts",
  dialect: "sqlite",
  driver: "durable-sqlite",
});
