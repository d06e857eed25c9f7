# Bring what exists into this form's state: the subnet the virtual network
# of ../inline-subnets declared inline, its NSG association, the route table
# routekeeper created, and the subnet's association with it. Only for moving
# an existing deployment; a new one needs no imports (remove this file).

import {
  to = azurerm_subnet.kubernetes
  id = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet/subnets/kubernetes-subnet"
}

import {
  to = azurerm_subnet_network_security_group_association.kubernetes
  id = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet/subnets/kubernetes-subnet"
}

import {
  to = azurerm_route_table.kubernetes
  id = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/kubernetes-routes"
}

import {
  to = azurerm_subnet_route_table_association.kubernetes
  id = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet/subnets/kubernetes-subnet"
}
