// Byte counts as people read them (memory plans, budgets).
const GiB = 2 ** 30;
const MiB = 2 ** 20;

export function formatBytes(bytes: number): string {
  if (bytes >= GiB) return `${(bytes / GiB).toFixed(2)} GiB`;
  if (bytes >= MiB) return `${(bytes / MiB).toFixed(1)} MiB`;
  return `${(bytes / 1024).toFixed(1)} KiB`;
}
