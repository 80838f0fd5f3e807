// Prints the one line CI reads: "N passed, N failed[, N skipped]". With
// HB_TEST_SUMMARY_FILE set it also appends the counts there as JSON, so .ci/run can
// add up several jest runs (the CUDA build and the CPU-only fallbacks).
'use strict';
const fs = require('fs');

class SummaryReporter {
  onRunComplete(_contexts, results) {
    // A suite that fails to load has no test results; count it as a failure.
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const skipped = results.numPendingTests + results.numTodoTests;
    const line = `${results.numPassedTests} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : '');
    // Tests of describeCuda suites carry "[CUDA: <schedule>]" in their names: say how many
    // ran, so a CI log shows the CUDA kernels executed rather than skipped.
    let cuda = 0;
    let emulated = false;
    for (const file of results.testResults) {
      for (const t of file.testResults) {
        const match = /\[CUDA: ([^\]]*)\]/.exec(t.fullName);
        if (match && t.status === 'passed') {
          cuda += 1;
          emulated = emulated || match[1].startsWith('emulated');
        }
      }
    }
    if (cuda > 0) process.stdout.write(`\nCUDA tests: ${cuda} passed on ${emulated ? 'the emulated device' : 'a GPU'}\n`);
    process.stdout.write(`\n${line}\n`);
    if (process.env.HB_TEST_SUMMARY_FILE) {
      fs.appendFileSync(
        process.env.HB_TEST_SUMMARY_FILE,
        JSON.stringify({ passed: results.numPassedTests, failed, skipped }) + '\n',
      );
    }
  }
}

module.exports = SummaryReporter;
