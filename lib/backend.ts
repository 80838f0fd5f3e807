// hb.backend(), hb.setDevice() and the current device. Nothing is chosen when a module
// is imported: the device is the one hb.setDevice() named, else HB_DEVICE, else CUDA
// when usable (a real GPU, not the emulated device of an HB_CUDA_EMULATE build), else
// the CPU, worked out when first asked for.
import { BackendReport, native } from './native';

export type DeviceSpec = 'cpu' | 'cuda' | `cuda:${number}` | 'cuda-emulated';

let chosen: string | undefined;
let byDefault: string | undefined;

function defaultDevice(): string {
  if (byDefault !== undefined) return byDefault;
  const requested = process.env.HB_DEVICE;
  if (requested) {
    try {
      byDefault = native.resolveDevice(requested, 'setDevice');
    } catch (error) {
      const e = error as Error & { code?: string };
      const wrapped = new Error(`HB_DEVICE=${requested}: ${e.message}`) as Error & { code?: string };
      wrapped.code = e.code;
      throw wrapped;
    }
  } else if (native.backendReport().cuda.emulated) {
    // An emulated device is for testing the CUDA kernels: slow, and never a silent choice.
    byDefault = 'cpu';
  } else {
    try {
      byDefault = native.resolveDevice('cuda', 'default device');
    } catch {
      byDefault = 'cpu';
    }
  }
  return byDefault;
}

/** What the addon was built with, what it found on this machine, and the current device. */
export function backend(): BackendReport {
  return { device: currentDevice().startsWith('cuda') ? 'cuda' : 'cpu', ...native.backendReport() };
}

/**
 * Sets the device new tensors, variables and work go to. Throws if it cannot be used
 * here (no CUDA in this build, no driver, no such device).
 */
export function setDevice(device: DeviceSpec): void {
  if (typeof device !== 'string') throw new TypeError('setDevice: device must be a string');
  chosen = native.resolveDevice(device, 'setDevice');
}

/** 'cpu' or 'cuda:N'. */
export function currentDevice(): string {
  return chosen ?? defaultDevice();
}

/** The canonical device for an optional user-given spec, checked usable. */
export function resolveDevice(device: string | undefined, argument: string): string {
  if (device === undefined) return currentDevice();
  if (typeof device !== 'string') throw new TypeError(`${argument} must be a string such as 'cpu' or 'cuda:0'`);
  return native.resolveDevice(device, argument);
}
