#!/usr/bin/env node
// The package's command: a thin shim over ../agent.js, as most agent
// packages have one. npm always packs the `bin` file; agent.js is packed only
// because `files` lists it, which is what tests/packaging breaks on purpose.
import { main } from '../agent.js';

process.exitCode = await main(process.argv.slice(2));
