# Take over the egress route that ../inline-routes wrote inline as an
# azurerm_route of its own. Only for moving an existing deployment.

import {
  to = azurerm_route.default_egress
  id = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes/routes/default-egress"
}
