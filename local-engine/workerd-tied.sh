#!/bin/sh
# workerd, killed when the process that started it (the engine host) dies, however it dies:
# setpriv sets PR_SET_PDEATHSIG and then runs workerd in its place (same pid). Without it, a
# kill -9 of the engine host would leave workerd serving its state. Miniflare runs this as
# its workerd (MINIFLARE_WORKERD_PATH); EDGEPLANE_WORKERD names the real binary.
exec setpriv --pdeathsig KILL -- "$EDGEPLANE_WORKERD" "$@"
