// X-Hub-Signature-256 (functions/codehost/verify.ts) against GitHub's published test vector
// (docs.github.com, "Validating webhook deliveries"), and what it refuses.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { githubSignature, verifyGithubSignature } from '../../functions/codehost/verify.ts';

const SECRET = "It's a Secret to Everybody";
const BODY = new TextEncoder().encode('Hello, World!');
const VECTOR = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

test("GitHub's vector: the signer matches it and the verifier accepts it (hex in either case)", () => {
  assert.is(githubSignature(SECRET, BODY), VECTOR);
  assert.ok(verifyGithubSignature(VECTOR, BODY, SECRET));
  assert.ok(verifyGithubSignature(VECTOR.toUpperCase().replace('SHA256=', 'sha256='), BODY, SECRET));
});

test('refused: another secret, another body, no header, other schemes, truncated or padded hex', () => {
  assert.not.ok(verifyGithubSignature(VECTOR, BODY, 'another secret'));
  assert.not.ok(verifyGithubSignature(VECTOR, new TextEncoder().encode('Hello, World?'), SECRET));
  for (const header of [null, '', 'sha256=', VECTOR.slice(0, -2), `${VECTOR}00`, VECTOR.replace('sha256=', 'sha1='), VECTOR.replace('sha256=', ''), ` ${VECTOR}`, `sha256=${'0'.repeat(64)}`]) {
    assert.not.ok(verifyGithubSignature(header, BODY, SECRET), String(header));
  }
});

test.run();
