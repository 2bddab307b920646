// The reference over the four documents this server serves; Swagger UI from the npm
// package swagger-ui-dist, served by this server (no CDN). No validator badge (it would
// call another host), and "try it out" sends requests to this server only.
'use strict';
window.ui = SwaggerUIBundle({
  urls: [
    { url: '/openapi.json', name: 'AgentLex (/v1): collections, search, research' },
    { url: '/openapi/agents.json', name: 'Agents (/api/v1): SOAT agents and generations' },
    { url: '/openapi/retrieval.json', name: 'Retrieval plugin (/query, /upsert, /delete)' },
    { url: '/openapi/gateway.json', name: 'Model gateway (/v1/chat/completions)' },
  ],
  'urls.primaryName': new URLSearchParams(location.search).get('urls.primaryName') || undefined,
  dom_id: '#swagger-ui',
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: 'StandaloneLayout',
  deepLinking: true,
  validatorUrl: null,
  tryItOutEnabled: false,
  persistAuthorization: false,
});
