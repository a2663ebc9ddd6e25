// Stands in for a tool server's command on replay, where nothing may start
// it: if it is ever started it writes its marker file (the path in argv[2],
// holding its arguments and pid) and exits 1, so the test that checks the
// marker is absent fails, and a client talking to it gets no server.
import fs from 'node:fs';

const marker = process.argv[2];
if (marker) fs.writeFileSync(marker, `${JSON.stringify({ argv: process.argv.slice(3), pid: process.pid })}\n`);
process.stderr.write(`tripwire: started (${process.argv.slice(2).join(' ')}); nothing may start this command on replay\n`);
process.exit(1);
