import type { ApiError } from '../lib/api';

/** The GPU models a node may be registered with (the catalog's codes). */
export const GPU_MODELS = ['H100', 'H200', 'A100-80GB', 'A100-40GB', 'B200', 'GB200', 'L40S'] as const;

/** The GPUs of the UUIDs field: one per line, blank lines left out, indexed in order. */
export function gpusOf(text: string): { uuid: string; index: number }[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((uuid, index) => ({ uuid, index }));
}

/** The server's error about the GPU on line `i + 1` (`gpus[i]…`), said with its line
 * instead of the field's path. */
export function gpuLineError(error: ApiError | null | undefined): string | null {
  const match = /^(?:input\.)?(gpus\[(\d+)\][.\w]*)/.exec(error?.field ?? '');
  if (!error || error.code !== 'INVALID_INPUT' || !match) return null;
  const path = `${match[1]}: `;
  const text = error.message.startsWith(path) ? error.message.slice(path.length) : error.message;
  return `Line ${Number(match[2]) + 1}: ${text}`;
}
