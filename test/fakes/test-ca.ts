// A throw-away certificate authority for the tests of self-managed code hosts (CODEHOST_CA_FILE): a CA
// and a leaf for 127.0.0.1 it signed, made with openssl in `dir` (ca.pem is the file a user would name).
// needs: openssl
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function makeTestCa(dir: string): { ca: string; key: string; cert: string } {
  const o = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  o(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=svc test CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-keyout', 'ca.key', '-out', 'ca.pem']);
  o(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', 'leaf.key', '-out', 'leaf.csr']);
  writeFileSync(join(dir, 'leaf.ext'), 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  o(['x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'leaf.ext', '-out', 'leaf.pem']);
  return { ca: join(dir, 'ca.pem'), key: readFileSync(join(dir, 'leaf.key'), 'utf8'), cert: readFileSync(join(dir, 'leaf.pem'), 'utf8') };
}
