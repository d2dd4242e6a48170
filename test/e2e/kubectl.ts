import { execFile } from 'node:child_process';

/** kubectl with the given kubeconfig; resolves with its exit code and output. */
export function kubectl(
  bin: string,
  kubeconfig: string,
  args: string[],
  stdin: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      bin,
      args,
      { env: { ...process.env, KUBECONFIG: kubeconfig } },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end(stdin);
  });
}
