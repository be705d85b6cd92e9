// zod/v4/core/regexes.js in the Worker bundle (see unavailable.js): zod's own patterns for what the API
// validates (strings, numbers, booleans, e-mail addresses; a URL is checked by the URL parser), taken
// from zod itself; every other format's pattern refuses to be used. They are about 2 KiB gzip of the
// bundle; a zod upgrade that needs another name fails the build (scripts/check-aliases.mjs).
import { unavailable } from "./unavailable.js";

export {
  anyString,
  bigint,
  boolean,
  email,
  integer,
  null,
  number,
  string,
  undefined,
} from "../../node_modules/zod/v4/core/regexes.js";

/** A pattern that throws when matched: a format the Worker never validates. */
class Unavailable extends RegExp {
  constructor() {
    super("(?!)");
  }
  exec() {
    return unavailable();
  }
}
const pattern = new Unavailable();

export {
  pattern as base64,
  pattern as base64url,
  pattern as browserEmail,
  pattern as cidrv4,
  pattern as cidrv6,
  pattern as creditCard,
  pattern as cuid,
  pattern as cuid2,
  pattern as currencyCode,
  pattern as date,
  pattern as domain,
  pattern as duration,
  pattern as e164,
  pattern as extendedDuration,
  pattern as guid,
  pattern as hex,
  pattern as hostname,
  pattern as html5Email,
  pattern as httpProtocol,
  pattern as iban,
  pattern as idnEmail,
  pattern as ipv4,
  pattern as ipv6,
  pattern as ksuid,
  pattern as lowercase,
  pattern as mac,
  pattern as md5_base64,
  pattern as md5_base64url,
  pattern as md5_hex,
  pattern as nanoid,
  pattern as rfc5322Email,
  pattern as sha1_base64,
  pattern as sha1_base64url,
  pattern as sha1_hex,
  pattern as sha256_base64,
  pattern as sha256_base64url,
  pattern as sha256_hex,
  pattern as sha384_base64,
  pattern as sha384_base64url,
  pattern as sha384_hex,
  pattern as sha512_base64,
  pattern as sha512_base64url,
  pattern as sha512_hex,
  pattern as ulid,
  pattern as unicodeEmail,
  pattern as uppercase,
  pattern as uuid4,
  pattern as uuid6,
  pattern as uuid7,
  pattern as xid,
  unavailable as datetime,
  unavailable as emoji,
  unavailable as nanoidOfLength,
  unavailable as time,
  unavailable as uuid,
};
