import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OciConfig } from '../../image/oci';

/*
 * Runs an unpacked image's entrypoint the way a container runtime runs it in a pod with readOnlyRootFilesystem:
 * its own mount and PID namespaces (the entrypoint is PID 1), the root filesystem bind-mounted read-only, fresh
 * /proc, a /dev with the usual devices, an empty writable /tmp (the bundle's emptyDir), the service-account folder
 * mounted read-only, chroot into it as the image's user, the image's environment plus the pod's. The host network
 * is shared (the control plane and the webhook calls stay on 127.0.0.1). Needs root and util-linux's unshare.
 */

const SCRIPT = String.raw`
set -eu
root="$1"; sa="$2"; user="$3"; shift 3
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount -t tmpfs -o mode=755,size=1m tmpfs "$root/dev"
for d in null zero full random urandom; do touch "$root/dev/$d"; mount --bind "/dev/$d" "$root/dev/$d"; done
mount -t tmpfs -o mode=1777,size=64m tmpfs "$root/tmp"
mount --bind "$sa" "$root/var/run/secrets/kubernetes.io/serviceaccount"
mount -o remount,bind,ro "$root/var/run/secrets/kubernetes.io/serviceaccount"
mount -o remount,bind,ro "$root"
exec /usr/sbin/chroot --userspec="$user" "$root" "$@"
`;

/** A running container; `pid` is its entrypoint's (PID 1 inside), as the host sees it. */
export interface Container {
  child: ChildProcess;
  pid(): number;
  output(): string;
  exited: Promise<number | null>;
}

/** Starts config's entrypoint (plus `args`) from `rootfs` with the service-account folder `sa` and `env`. */
export function runContainer(
  rootfs: string,
  config: OciConfig,
  args: string[],
  sa: string,
  env: Record<string, string>,
): Container {
  // Mount points the runtime creates (the image need not ship them).
  for (const dir of ['proc', 'dev', 'var/run/secrets/kubernetes.io/serviceaccount'])
    mkdirSync(join(rootfs, dir), { recursive: true });
  const imageEnv = Object.fromEntries(
    (config.config.Env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
  );
  const command = [...(config.config.Entrypoint ?? []), ...(config.config.Cmd ?? []), ...args];
  const user = config.config.User || '0:0';
  const child = spawn(
    'unshare',
    [
      '--mount',
      '--pid',
      '--fork',
      '--kill-child',
      'sh',
      '-c',
      SCRIPT,
      'container',
      rootfs,
      sa,
      user,
      ...command,
    ],
    {
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', ...imageEnv, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    output: () => output,
    exited,
    // unshare --fork has one child: the shell that exec'd chroot that exec'd the entrypoint.
    pid: () => {
      const children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim();
      if (!children) throw new Error(`the container has not started (output: ${output})`);
      return Number(children.split(' ')[0]);
    },
  };
}

/** The real user and group ids of a process (from /proc). */
export function idsOf(pid: number): { uid: number; gid: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1]);
  return { uid: field('Uid'), gid: field('Gid') };
}
