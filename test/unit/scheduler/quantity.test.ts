import { describe, expect, it } from "vitest";
import { parseMilli, mustParseQuantity as parseQuantity, parseValue } from "../../../api/quantity";

describe("parseQuantity", () => {
  it("parses decimal and binary suffixes", () => {
    expect(parseMilli("100m")).toBe(100);
    expect(parseMilli("2")).toBe(2000);
    expect(parseMilli("0.5")).toBe(500);
    expect(parseMilli("1.5")).toBe(1500);
    expect(parseValue("1Gi")).toBe(1073741824);
    expect(parseValue("512Mi")).toBe(536870912);
    expect(parseValue("1Ki")).toBe(1024);
    expect(parseValue("1k")).toBe(1000);
    expect(parseValue("1M")).toBe(1e6);
    expect(parseValue("1G")).toBe(1e9);
    expect(parseValue("1e3")).toBe(1000);
    expect(parseValue("1E3")).toBe(1000);
    expect(parseValue("128974848")).toBe(128974848);
    expect(parseQuantity("250u")).toBeCloseTo(0.00025);
  });

  it("rounds up like Quantity.MilliValue / Value", () => {
    expect(parseMilli("1u")).toBe(1);
    expect(parseValue("1500m")).toBe(2);
    expect(parseMilli("0.1")).toBe(100);
  });

  it("accepts numbers and empty values", () => {
    expect(parseQuantity(3)).toBe(3);
    expect(parseQuantity(undefined)).toBe(0);
  });

  it("rejects malformed quantities", () => {
    expect(() => parseQuantity("1Gb")).toThrow(/quantities must match/);
    expect(() => parseQuantity("abc")).toThrow();
    expect(() => parseQuantity("1.2.3")).toThrow();
  });
});
