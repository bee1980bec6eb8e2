// Module shapes the bundler provides (wrangler's Text rule for drizzle-kit's .sql migrations).
declare module "*.sql" {
  const text: string;
  export default text;
}
