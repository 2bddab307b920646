// The console's entry: the core, then every feature module (each registers its routes
// and nav links at load), then the router starts.
import { start } from './core.js';
import './home.js';
import './collections.js';
import './search.js';
import './scan.js';
import './research.js';
import './agents.js';
import './sessions.js';
import './webhooks.js';
// actors (issue 36)
import './actors.js';
// evaluations (issue 37)
import './evals.js';

start();
