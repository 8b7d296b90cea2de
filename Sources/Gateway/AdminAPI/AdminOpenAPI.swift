/// The admin API described (OpenAPI 3.1), served at `/openapi.json`. `AdminRoutes` and `AdminServer`
/// answer what it lists; the tests check live answers against it, and `.ci/run` runs schemathesis on it.
/// Counter objects are described as maps of integers: their keys are the counters' field names, which
/// grow as the gateway counts more (docs/metrics.md names each).
enum AdminOpenAPI {
    static let document = #"""
        {
          "openapi": "3.1.0",
          "info": {
            "title": "Pushgate admin API",
            "version": "1",
            "description": "Lookups, counters, health and the live feed of a Pushgate gateway (admin.port, 2201). On loopback with no admin.token it needs no authorization; with admin.token every path but /dashboard needs `Authorization: Bearer <admin.token>`. Times are milliseconds since the epoch."
          },
          "servers": [{"url": "http://127.0.0.1:2201"}],
          "security": [{"adminToken": []}],
          "paths": {
            "/health": {
              "get": {
                "summary": "Alive: the process answers.",
                "operationId": "health",
                "responses": {
                  "200": {"description": "Alive.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Health"}}}},
                  "401": {"$ref": "#/components/responses/Unauthorized"}
                }
              }
            },
            "/ready": {
              "get": {
                "summary": "Ready for traffic: listeners bound, not draining, the store answering (with several nodes, also the nodes' listening connection).",
                "operationId": "ready",
                "responses": {
                  "200": {"description": "Ready.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Readiness"}}}},
                  "503": {"description": "Not ready (e.g. draining): which check failed.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Readiness"}}}},
                  "401": {"$ref": "#/components/responses/Unauthorized"}
                }
              }
            },
            "/metrics": {
              "get": {
                "summary": "Prometheus text exposition (docs/metrics.md).",
                "operationId": "metrics",
                "responses": {
                  "200": {"description": "The metrics.", "content": {"text/plain; version=0.0.4; charset=utf-8": {"schema": {"type": "string"}}}},
                  "401": {"$ref": "#/components/responses/Unauthorized"}
                }
              }
            },
            "/openapi.json": {
              "get": {
                "summary": "This document.",
                "operationId": "openapi",
                "responses": {
                  "200": {"description": "The OpenAPI document.", "content": {"application/json": {"schema": {"type": "object"}}}},
                  "401": {"$ref": "#/components/responses/Unauthorized"}
                }
              }
            },
            "/v1/counters": {
              "get": {
                "summary": "The policy's, the hub's, the doors' and the store's counters, and accept-to-device-ack latency.",
                "operationId": "counters",
                "responses": {
                  "200": {"description": "The counters.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Counters"}}}},
                  "401": {"$ref": "#/components/responses/Unauthorized"}
                }
              }
            },
            "/v1/broadcasts": {
              "get": {
                "summary": "How the last broadcasts fanned out from this node: subscribers written and acknowledged, and milliseconds from the stored broadcast to the first, median, p99 and last acknowledgement (docs/live-activities.md).",
                "operationId": "broadcasts",
                "responses": {
                  "200": {"description": "The last broadcasts, oldest first.", "content": {"application/json": {"schema": {"type": "object", "required": ["broadcasts"], "properties": {"broadcasts": {"type": "array", "items": {"type": "object"}}}}}}},
                  "401": {"$ref": "#/components/responses/Unauthorized"}
                }
              }
            },
            "/v1/fleet": {
              "get": {
                "summary": "The freshness figures of a simulated fleet of iPhones running in the gateway's process (pushgate demo): the report per kind of iPhone, its timeline, the versions published and their announcements (docs/device-runtime.md).",
                "operationId": "fleet",
                "responses": {
                  "200": {"description": "The fleet's figures.", "content": {"application/json": {"schema": {"type": "object"}}}},
                  "401": {"$ref": "#/components/responses/Unauthorized"},
                  "404": {"$ref": "#/components/responses/Error"}
                }
              }
            },
            "/v1/notifications/{apnsID}": {
              "get": {
                "summary": "A notification's journey: the store's record and each decision with its rule, in Apple's delivery states.",
                "operationId": "notification",
                "parameters": [{"name": "apnsID", "in": "path", "required": true, "description": "The apns-id, or the apns-unique-id a development gateway answered with (canonical UUID).", "schema": {"type": "string", "pattern": "^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"}}],
                "responses": {
                  "200": {"description": "What is known of it.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NotificationJourney"}}}},
                  "400": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Unauthorized"}
                }
              }
            },
            "/v1/devices/{deviceID}": {
              "get": {
                "summary": "A device's connection, conditions and owner node, and each app's token and silent budget.",
                "operationId": "device",
                "parameters": [{"$ref": "#/components/parameters/DeviceSlot"}],
                "responses": {
                  "200": {"description": "The device.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeviceState"}}}},
                  "404": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Unauthorized"}
                }
              },
              "delete": {
                "summary": "Removes the device (pushgate devices remove): its tokens answer 410 Unregistered from now on, held pushes are discarded, it cannot connect again.",
                "operationId": "removeDevice",
                "parameters": [{"$ref": "#/components/parameters/DeviceSlot"}],
                "responses": {
                  "200": {"description": "Removed.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Removed"}}}},
                  "404": {"$ref": "#/components/responses/Error"},
                  "409": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Unauthorized"}
                }
              }
            },
            "/v1/tokens/{token}": {
              "get": {
                "summary": "A device token's device, app, status, connection and silent budget.",
                "operationId": "token",
                "parameters": [{"name": "token", "in": "path", "required": true, "description": "The device token (hex, an even number of digits).", "schema": {"type": "string", "pattern": "^([0-9A-Fa-f]{2}){1,512}$"}}],
                "responses": {
                  "200": {"description": "The token.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TokenState"}}}},
                  "400": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Unauthorized"}
                }
              }
            },
            "/v1/live": {
              "get": {
                "summary": "Server-sent events, one a second until the client leaves: each `data:` line is a LiveFigures object (the dashboard reads it).",
                "operationId": "live",
                "responses": {
                  "200": {"description": "The event stream.", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                  "401": {"$ref": "#/components/responses/Unauthorized"}
                }
              }
            },
            "/dashboard": {
              "get": {
                "summary": "The live dashboard (one HTML page; it asks for the token when the data needs one).",
                "operationId": "dashboard",
                "security": [],
                "responses": {"200": {"description": "The page.", "content": {"text/html; charset=utf-8": {"schema": {"type": "string"}}}}}
              }
            }
          },
          "components": {
            "securitySchemes": {
              "adminToken": {"type": "http", "scheme": "bearer", "description": "admin.token (none needed on loopback when it is empty)."}
            },
            "parameters": {
              "DeviceSlot": {"name": "deviceID", "in": "path", "required": true, "description": "The device id from its registration.", "schema": {"type": "string"}}
            },
            "responses": {
              "Error": {"description": "What was wrong, in words.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
              "Unauthorized": {"description": "admin.token is set and the request did not carry it.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
            },
            "schemas": {
              "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
              "Health": {"type": "object", "required": ["status"], "properties": {"status": {"const": "ok"}}},
              "Readiness": {
                "type": "object", "required": ["status", "checks", "pid"],
                "properties": {
                  "status": {"enum": ["ready", "not ready"]},
                  "pid": {"type": "integer", "description": "The answering process's id."},
                  "checks": {"type": "object", "additionalProperties": {"type": "boolean"}, "description": "Each check by name: provider_listeners, device_listeners, not_draining, store, (several nodes) nodes_listening."}
                }
              },
              "Removed": {"type": "object", "required": ["removed"], "properties": {"removed": {"type": "string"}}},
              "CounterMap": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
              "Counters": {
                "type": "object",
                "required": ["policy", "hub", "connectedDevices", "providerConnections", "connections", "acceptToDeviceAckMicroseconds", "acceptToDeviceAckBuckets"],
                "properties": {
                  "policy": {"$ref": "#/components/schemas/CounterMap", "description": "The silent-push policy's counters (held, woken, released, coalesced, completions …; heldNow is a gauge)."},
                  "hub": {"$ref": "#/components/schemas/CounterMap", "description": "The device hub's counters (sent, resent, delivered, acknowledged, disconnections, enrolments refused, devices removed …)."},
                  "connectedDevices": {"type": "integer", "minimum": 0},
                  "providerConnections": {"type": "integer", "minimum": 0},
                  "connections": {
                    "type": "object", "description": "Each listener kind's door (provider, devices).",
                    "additionalProperties": {
                      "type": "object", "required": ["open", "limit", "refusedListenerCap", "refusedAddressCap", "handshakeTimeouts"],
                      "properties": {
                        "open": {"type": "integer", "minimum": 0},
                        "limit": {"type": "integer", "minimum": 0, "description": "Connections this door holds at once (devices.max_connections or provider.max_connections as resolved; 0: no cap)."},
                        "refusedListenerCap": {"type": "integer", "minimum": 0},
                        "refusedAddressCap": {"type": "integer", "minimum": 0},
                        "handshakeTimeouts": {"type": "integer", "minimum": 0}
                      }
                    }
                  },
                  "acceptToDeviceAckMicroseconds": {
                    "type": "object", "required": ["count", "p50", "p90", "p99", "max"],
                    "properties": {
                      "count": {"type": "integer", "minimum": 0}, "p50": {"type": "integer", "minimum": 0},
                      "p90": {"type": "integer", "minimum": 0}, "p99": {"type": "integer", "minimum": 0},
                      "max": {"type": "integer", "minimum": 0}
                    }
                  },
                  "acceptToDeviceAckBuckets": {
                    "type": "array", "description": "The latency histogram's non-empty buckets: [microseconds, count].",
                    "items": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2, "maxItems": 2}
                  },
                  "store": {
                    "type": "object", "description": "The store writer's commits (absent without a store).",
                    "required": ["commits", "changes", "largestBatch", "failures", "totalMicroseconds", "slowestMicroseconds", "expired", "committing"],
                    "properties": {
                      "commits": {"type": "integer", "minimum": 0}, "changes": {"type": "integer", "minimum": 0},
                      "largestBatch": {"type": "integer", "minimum": 0}, "failures": {"type": "integer", "minimum": 0},
                      "totalMicroseconds": {"type": "integer", "minimum": 0}, "slowestMicroseconds": {"type": "integer", "minimum": 0},
                      "expired": {"type": "integer", "minimum": 0, "description": "Batches dropped unattempted after store.wait_limit_seconds behind a commit that did not end (their POSTs answered 503)."},
                      "committing": {"type": "integer", "minimum": 0, "description": "Changes in the commit running now (0: none)."}
                    }
                  }
                }
              },
              "NotificationJourney": {
                "type": "object", "required": ["apnsID", "uniqueID", "deliveryState", "steps"],
                "properties": {
                  "apnsID": {"type": "string"},
                  "uniqueID": {"type": "string", "description": "The apns-unique-id: in the development environment the 200 carries it; it leads here too."},
                  "deliveryState": {"type": "string", "description": "Where it stands now, in Apple's words (Push Notifications Console): received, delivered_to_device, delivered_from_storage, stored_device_offline, stored_power_considerations, discarded_token_unregistered, discarded_expired, discarded_coalesced."},
                  "stored": {
                    "type": "object", "description": "The store's record (kept for store.retention_seconds).",
                    "required": ["state", "topic", "pushType", "priority", "receivedAt"],
                    "properties": {
                      "state": {"enum": ["pending", "delivered", "discarded", "no_device"]},
                      "rule": {"type": "string"}, "deviceID": {"type": "string"}, "topic": {"type": "string"},
                      "pushType": {"type": "string"}, "priority": {"enum": [1, 5, 10]}, "collapseID": {"type": "string"},
                      "receivedAt": {"type": "integer"}, "expiresAt": {"type": "integer"}
                    }
                  },
                  "steps": {
                    "type": "array",
                    "items": {
                      "type": "object", "required": ["at", "event", "state"],
                      "properties": {
                        "at": {"type": "integer"}, "event": {"type": "string"}, "rule": {"type": "string"},
                        "state": {"type": "string", "description": "Apple's delivery state after this step."}
                      }
                    }
                  }
                }
              },
              "Budget": {
                "type": "object",
                "required": ["budgetLeft", "budgetCapacity", "held", "strikes", "awaitingCompletion", "appState"],
                "properties": {
                  "budgetLeft": {"type": "integer", "minimum": 0}, "budgetCapacity": {"type": "integer", "minimum": 0},
                  "nextRefillAt": {"type": "integer"},
                  "held": {"type": "array", "items": {"type": "string"}, "description": "Held pushes: apns-id (rule)."},
                  "strikes": {"type": "number", "minimum": 0}, "coolingUntil": {"type": "integer"},
                  "awaitingCompletion": {"type": "array", "items": {"type": "string"}},
                  "appState": {"enum": ["foreground", "background", "suspended", "not_running", "force_quit"]},
                  "frequentPushes": {"type": "boolean", "description": "The app's Live Activities have the larger budget (NSSupportsLiveActivitiesFrequentUpdates, frequentPushesEnabled)."}
                }
              },
              "DeviceState": {
                "type": "object", "required": ["deviceID", "connected", "lowPowerMode", "backgroundAppRefreshOff", "apps"],
                "properties": {
                  "deviceID": {"type": "string"}, "connected": {"type": "boolean"}, "lowPowerMode": {"type": "boolean"},
                  "backgroundAppRefreshOff": {"type": "boolean"}, "owner": {"type": "string", "description": "With several nodes: the node that runs its policy."},
                  "apps": {
                    "type": "array",
                    "items": {
                      "type": "object", "required": ["bundleID", "token"],
                      "properties": {"bundleID": {"type": "string"}, "token": {"type": "string"}, "budget": {"$ref": "#/components/schemas/Budget"}}
                    }
                  }
                }
              },
              "TokenState": {
                "type": "object", "required": ["token", "deviceID", "bundleID", "status", "connected"],
                "properties": {
                  "token": {"type": "string"}, "deviceID": {"type": "string"}, "bundleID": {"type": "string"},
                  "status": {"type": "string", "description": "active, or unregistered since <ms>."},
                  "connected": {"type": "boolean"}, "owner": {"type": "string"},
                  "budget": {"$ref": "#/components/schemas/Budget"}
                }
              },
              "LiveFigures": {
                "type": "object", "description": "One /v1/live event.",
                "required": ["at", "seconds", "rates", "outcomes", "connectedDevices", "heldNow", "deadlineMisses", "acceptedTotal"],
                "properties": {
                  "at": {"type": "integer"}, "seconds": {"type": "number"},
                  "rates": {"type": "object", "additionalProperties": {"type": "number"}},
                  "outcomes": {"type": "object", "additionalProperties": {"type": "integer"}},
                  "postLatencyMs": {"$ref": "#/components/schemas/Percentiles"},
                  "deviceLatencyMs": {"$ref": "#/components/schemas/Percentiles"},
                  "connectedDevices": {"type": "integer"}, "heldNow": {"type": "integer"},
                  "deadlineMisses": {"type": "integer"}, "acceptedTotal": {"type": "integer"}
                }
              },
              "Percentiles": {
                "type": "object", "required": ["p50", "p90", "p99"],
                "properties": {"p50": {"type": "number"}, "p90": {"type": "number"}, "p99": {"type": "number"}}
              }
            }
          }
        }
        """#
}
