// svc-runner command line (spec: Runner command line). This build has `version` and `help`;
// the daemon, pairing and the rest of the table arrive with the runner issue.
import mri from 'mri';
import { VERSION } from '../protocol/version.ts';

export const USAGE = `Usage: svc-runner <command>

Commands:
  pair --server <api-origin> --code <XXXX-XXXX> [--no-detect]
  run                 the daemon in the foreground
  status              pairing, server and spool state
  profiles [--detect [--write]]
  install-service     write a systemd user unit or launchd agent
  version             print version and target (also --version, -v)
  help                print this text (also --help, -h)
`;

export function target(): string {
  const os = process.platform === 'win32' ? 'windows' : process.platform;
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  return `${os}-${arch}`;
}

export function main(argv: string[], out = process.stdout, err = process.stderr): number {
  const args = mri(argv, { boolean: ['help', 'version'], alias: { h: 'help', v: 'version' } });
  const command = args.version ? 'version' : args.help ? 'help' : args._[0];
  switch (command) {
    case 'version':
      out.write(`${VERSION} ${target()}\n`);
      return 0;
    case 'help':
    case undefined:
      out.write(USAGE);
      return command === 'help' ? 0 : 2;
    case 'pair':
    case 'run':
    case 'status':
    case 'profiles':
    case 'install-service':
    case 'exec-run':
      err.write(`svc-runner: '${command}' is not available in this build yet\n`);
      return 1;
    default:
      err.write(`svc-runner: unknown command '${command}'\n\n${USAGE}`);
      return 2;
  }
}

process.exitCode = main(process.argv.slice(2));
