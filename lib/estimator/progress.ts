// Training progress: a bar with steps/s and samples/s on a terminal (cli-progress),
// plain log lines every logStepCountSteps steps either way.
import { SingleBar } from 'cli-progress';

export class TrainingProgress {
  private bar?: SingleBar;
  private windowStart = Date.now();
  private windowSteps = 0;
  private windowSamples = 0;
  private lastRate = { steps: 0, samples: 0 };
  private payload: Record<string, string | number> = { loss: '-', stepsPerSec: '-', samplesPerSec: '-' };

  constructor(
    private readonly log: (line: string) => void,
    private readonly every: number,
    showBar: boolean,
    startStep: number,
    maxSteps: number | undefined,
  ) {
    if (showBar && maxSteps !== undefined) {
      this.bar = new SingleBar({
        format: 'train [{bar}] {value}/{total} steps | loss {loss} | {stepsPerSec} steps/s | {samplesPerSec} samples/s',
        stream: process.stderr,
        hideCursor: true,
      });
      this.bar.start(maxSteps, startStep, this.payload);
    }
  }

  step(globalStep: number, loss: number, samples: number): void {
    this.windowSteps++;
    this.windowSamples += samples;
    const seconds = (Date.now() - this.windowStart) / 1000;
    if (seconds >= 1 || (this.every > 0 && globalStep % this.every === 0)) {
      this.lastRate = { steps: this.windowSteps / Math.max(seconds, 1e-9), samples: this.windowSamples / Math.max(seconds, 1e-9) };
      this.windowStart = Date.now();
      this.windowSteps = 0;
      this.windowSamples = 0;
    }
    this.payload = {
      loss: loss.toFixed(5),
      stepsPerSec: this.lastRate.steps.toFixed(1),
      samplesPerSec: Math.round(this.lastRate.samples),
    };
    this.bar?.update(globalStep, this.payload);
    if (this.every > 0 && globalStep % this.every === 0) {
      this.line(`step ${globalStep}: loss = ${loss.toPrecision(6)} (${this.lastRate.steps.toFixed(2)} steps/s, ${Math.round(this.lastRate.samples)} samples/s)`);
    }
  }

  line(text: string): void {
    if (this.bar) {
      // Keep the bar below the log line.
      this.bar.stop();
      this.log(text);
      this.bar.start(this.bar.getTotal(), Math.round(this.bar.getProgress() * this.bar.getTotal()), this.payload);
    } else {
      this.log(text);
    }
  }

  stop(): void {
    this.bar?.stop();
    this.bar = undefined;
  }
}
