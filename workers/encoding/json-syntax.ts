// Why a JSON body does not parse, in the words kube-apiserver uses. Its decoder reads the
// kind with Go's encoding/json, which first checks the whole text byte by byte and names
// the first byte that cannot continue it: `invalid character '}' after object key`, or
// `unexpected end of JSON input`. JSON.parse words the same failures its own way, so when it
// fails the text is walked again here (only then: a body that parses is never walked).

/** What the walker expects next. */
enum At {
  Value,
  ValueOrClose,
  KeyOrClose,
  Key,
  Str,
  Escape,
  Hex,
  Minus,
  Int,
  Zero,
  Dot,
  Frac,
  Exp,
  ExpSign,
  ExpDigits,
  Literal,
  End,
}

/** The composite a value sits in: an object's key, an object's value, an array's item. */
enum In {
  Key,
  Value,
  Item,
}

const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isHex = (c: number) => isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
const hex2 = (c: number) => c.toString(16).padStart(2, "0");

const NAMED_ESCAPES: Record<number, string> = {
  7: "\\a",
  8: "\\b",
  9: "\\t",
  10: "\\n",
  11: "\\v",
  12: "\\f",
  13: "\\r",
};

/**
 * A byte as Go quotes it in these messages: the byte read as the code point of the same
 * number, between single quotes, escaped as strconv.Quote escapes it.
 */
export function quoteByte(c: number): string {
  if (c === 0x27) return "'\\''";
  if (c === 0x22) return "'\"'";
  if (c === 0x5c) return "'\\\\'";
  if (NAMED_ESCAPES[c]) return `'${NAMED_ESCAPES[c]}'`;
  if (c < 0x20 || c === 0x7f) return `'\\x${hex2(c)}'`;
  // C1 controls, the no-break space and the soft hyphen are not printable in Go's sense
  if ((c >= 0x80 && c <= 0xa0) || c === 0xad) return `'\\u00${hex2(c)}'`;
  return `'${String.fromCharCode(c)}'`;
}

const invalid = (c: number, context: string) => `invalid character ${quoteByte(c)} ${context}`;

/** The state after `c` when it goes on with the number read in state `at`; undefined when the number ends before it. */
function numberStep(at: At, c: number): At | undefined {
  const digit = isDigit(c);
  const exp = c === 0x65 || c === 0x45;
  switch (at) {
    case At.Int:
      return digit ? At.Int : c === 0x2e ? At.Dot : exp ? At.Exp : undefined;
    case At.Zero:
      return c === 0x2e ? At.Dot : exp ? At.Exp : undefined;
    case At.Frac:
      return digit ? At.Frac : exp ? At.Exp : undefined;
    case At.ExpDigits:
      return digit ? At.ExpDigits : undefined;
    default:
      return undefined;
  }
}

const isNumberEnd = (at: At) => at === At.Int || at === At.Zero || at === At.Frac || at === At.ExpDigits;

/**
 * The first syntax error of `bytes` as JSON, in encoding/json's words, or undefined when
 * they are well-formed JSON (one value, space around it).
 */
export function jsonSyntaxError(bytes: Uint8Array): string | undefined {
  const stack: In[] = [];
  let at = At.Value;
  let literal = "";
  let next = 0; // the literal's next letter, or the \u escape's hex digits left
  /** a composite closed: the value it was ends there */
  const close = () => {
    stack.pop();
    at = At.End;
  };
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (isNumberEnd(at)) {
      const step = numberStep(at, c);
      if (step !== undefined) {
        at = step;
        continue;
      }
      at = At.End; // this byte is the first after the number
    }
    if (at === At.ValueOrClose || at === At.KeyOrClose) {
      if (isSpace(c)) continue;
      if (c === (at === At.ValueOrClose ? 0x5d : 0x7d)) {
        close();
        continue;
      }
      at = at === At.ValueOrClose ? At.Value : At.Key;
    }
    switch (at) {
      case At.Value:
        if (isSpace(c)) break;
        if (c === 0x7b) {
          stack.push(In.Key);
          at = At.KeyOrClose;
        } else if (c === 0x5b) {
          stack.push(In.Item);
          at = At.ValueOrClose;
        } else if (c === 0x22) at = At.Str;
        else if (c === 0x2d) at = At.Minus;
        else if (c === 0x30) at = At.Zero;
        else if (isDigit(c)) at = At.Int;
        else if (c === 0x74 || c === 0x66 || c === 0x6e) {
          literal = c === 0x74 ? "true" : c === 0x66 ? "false" : "null";
          next = 1;
          at = At.Literal;
        } else return invalid(c, "looking for beginning of value");
        break;
      case At.Key:
        if (isSpace(c)) break;
        if (c !== 0x22) return invalid(c, "looking for beginning of object key string");
        at = At.Str;
        break;
      case At.Str:
        if (c === 0x22) at = At.End;
        else if (c === 0x5c) at = At.Escape;
        else if (c < 0x20) return invalid(c, "in string literal");
        break;
      case At.Escape:
        if (c === 0x75) {
          next = 4;
          at = At.Hex;
        } else if ('bfnrt\\/"'.includes(String.fromCharCode(c))) at = At.Str;
        else return invalid(c, "in string escape code");
        break;
      case At.Hex:
        if (!isHex(c)) return invalid(c, "in \\u hexadecimal character escape");
        if (--next === 0) at = At.Str;
        break;
      case At.Minus:
        if (c === 0x30) at = At.Zero;
        else if (isDigit(c)) at = At.Int;
        else return invalid(c, "in numeric literal");
        break;
      case At.Literal: {
        const want = literal.charCodeAt(next);
        if (c !== want) return invalid(c, `in literal ${literal} (expecting ${quoteByte(want)})`);
        if (++next === literal.length) at = At.End;
        break;
      }
      case At.Dot:
        if (!isDigit(c)) return invalid(c, "after decimal point in numeric literal");
        at = At.Frac;
        break;
      case At.Exp:
      case At.ExpSign:
        if (at === At.Exp && (c === 0x2b || c === 0x2d)) at = At.ExpSign;
        else if (isDigit(c)) at = At.ExpDigits;
        else return invalid(c, "in exponent of numeric literal");
        break;
      case At.End: {
        if (isSpace(c)) break;
        const top = stack.length - 1;
        if (top < 0) return invalid(c, "after top-level value");
        if (stack[top] === In.Key) {
          if (c !== 0x3a) return invalid(c, "after object key");
          stack[top] = In.Value;
          at = At.Value;
        } else if (stack[top] === In.Value) {
          if (c === 0x2c) {
            stack[top] = In.Key;
            at = At.Key;
          } else if (c === 0x7d) close();
          else return invalid(c, "after object key:value pair");
        } else if (c === 0x2c) at = At.Value;
        else if (c === 0x5d) close();
        else return invalid(c, "after array element");
        break;
      }
    }
  }
  // a number ends with the text; anything else still open is cut short
  return stack.length === 0 && (at === At.End || isNumberEnd(at))
    ? undefined
    : "unexpected end of JSON input";
}

/**
 * The start of a body as upstream quotes it beside a decode error: up to 30 bytes, as text
 * when the body starts with `{` and in hex otherwise, then " ..." when there was more.
 */
export function summarizeBody(bytes: Uint8Array): string {
  if (bytes.length === 0) return "<empty>";
  const head = bytes.subarray(0, 30);
  const more = bytes.length > 30 ? " ..." : "";
  if (bytes[0] === 0x7b) return new TextDecoder().decode(head) + more;
  return Array.from(head, hex2).join("") + more;
}
