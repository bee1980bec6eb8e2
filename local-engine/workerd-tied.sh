#!/bin/sh
# workerd, killed when the process that started it (the engine host) dies, however it dies:
# setpriv sets PR_SET_PDEATHSIG and then runs workerd in its place (same pid). Without it, a
# kill -9 of the engine host would leave workerd serving its state. Miniflare runs this as
# its workerd (MINIFLARE_WORKERD_PATH); EDGEPLANE_WORKERD names the real binary.
# EDGEPLANE_DEBUG_PORT: workerd also serves its debug port there (127.0.0.1), through which the
# other workerd processes of the engine reach its Durable Objects (store-hosts.ts); Miniflare
# opens one only for its dev registry, on a port of its choosing.
if [ -n "$EDGEPLANE_DEBUG_PORT" ]; then
  exec setpriv --pdeathsig KILL -- "$EDGEPLANE_WORKERD" "$@" "--debug-port=127.0.0.1:$EDGEPLANE_DEBUG_PORT"
fi
exec setpriv --pdeathsig KILL -- "$EDGEPLANE_WORKERD" "$@"
