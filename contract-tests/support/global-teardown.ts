export default async function globalTeardown(): Promise<void> {
  await globalThis.__CONTRACT_CLEANUP__?.();
  const gw = globalThis.__CONTRACT_GATEWAY__;
  if (!gw) return;
  await gw.stop('SIGTERM');
  // CONTRACT_SHOW_LOGS=1 prints the shared gateway's log after the run (debugging aid).
  if (process.env.CONTRACT_SHOW_LOGS === '1') process.stderr.write(gw.output());
}
