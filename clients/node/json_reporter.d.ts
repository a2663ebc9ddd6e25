// Type declarations for @understudy/client/json_reporter (json_reporter.js).

/** One event of node:test's reporter stream ('test:start', 'test:pass', 'test:fail', ...). */
export interface ReporterEvent {
  type: string;
  data: unknown;
}

/**
 * A node:test reporter (`--test-reporter=@understudy/client/json_reporter`):
 * yields one JSON document, `{"tests": [{name, outcome, message, seconds,
 * file}]}`, once the run is over.
 */
export default function jsonReporter(source: AsyncIterable<ReporterEvent>): AsyncGenerator<string, void, unknown>;
