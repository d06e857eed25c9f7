# Fix 3: the table's routes left out of the code. The table is declared
# without inline route blocks and with `lifecycle { ignore_changes = [route] }`;
# the route this code does want is an azurerm_route resource of its own. An
# apply never PUTs the whole table, so routekeeper's pod routes stay.
#
# imports.tf takes over the egress route that ../inline-routes created
# inline; leave it out for a new deployment.

terraform {
  required_providers {
    azurerm = {
      source = "hashicorp/azurerm"
    }
  }
}

provider "azurerm" {
  features {}
  # The minimal set of resource providers (Microsoft.Network among them)
  # the provider makes sure are registered in the subscription.
  resource_provider_registrations = "core"
}

resource "azurerm_resource_group" "kubernetes" {
  name     = "kubernetes"
  location = "eastus"
}

resource "azurerm_network_security_group" "kubernetes" {
  name                = "kubernetes-nsg"
  location            = azurerm_resource_group.kubernetes.location
  resource_group_name = azurerm_resource_group.kubernetes.name

  security_rule {
    name                       = "kubernetes-allow-ssh"
    priority                   = 1000
    direction                  = "Inbound"
    access                     = "Allow"
    protocol                   = "Tcp"
    source_port_range          = "*"
    destination_port_range     = "22"
    source_address_prefix      = "*"
    destination_address_prefix = "*"
  }

  security_rule {
    name                       = "kubernetes-allow-api-server"
    priority                   = 1001
    direction                  = "Inbound"
    access                     = "Allow"
    protocol                   = "Tcp"
    source_port_range          = "*"
    destination_port_range     = "6443"
    source_address_prefix      = "*"
    destination_address_prefix = "*"
  }
}

resource "azurerm_virtual_network" "kubernetes" {
  name                = "kubernetes-vnet"
  address_space       = ["10.240.0.0/16"]
  location            = azurerm_resource_group.kubernetes.location
  resource_group_name = azurerm_resource_group.kubernetes.name
  # No inline subnet blocks: the subnet is a resource of its own below, so a
  # change of the virtual network never rewrites the subnet.
}

resource "azurerm_subnet" "kubernetes" {
  name                 = "kubernetes-subnet"
  resource_group_name  = azurerm_resource_group.kubernetes.name
  virtual_network_name = azurerm_virtual_network.kubernetes.name
  address_prefixes     = ["10.240.0.0/24"]
}

resource "azurerm_subnet_network_security_group_association" "kubernetes" {
  subnet_id                 = azurerm_subnet.kubernetes.id
  network_security_group_id = azurerm_network_security_group.kubernetes.id
}

resource "azurerm_subnet_route_table_association" "kubernetes" {
  subnet_id      = azurerm_subnet.kubernetes.id
  route_table_id = azurerm_route_table.kubernetes.id
}

resource "azurerm_route_table" "kubernetes" {
  name                = "kubernetes-routes"
  location            = azurerm_resource_group.kubernetes.location
  resource_group_name = azurerm_resource_group.kubernetes.name

  # routekeeper's tags: the claim (written when it created the table) and
  # the cluster's pod CIDRs (written with every write of the table). Declared
  # here, an apply has nothing to change on the table; left out, every plan
  # would remove them, and that update PUTs the whole table with its routes
  # as read at plan time.
  tags = {
    routekeeper-cluster       = "kthw"
    routekeeper-cluster-cidrs = "10.200.0.0/16"
  }

  # The pod routes are routekeeper's: no inline route blocks here (an inline
  # block makes the table's routes this code's, and an apply deletes every
  # other route), and the routes others write are not this code's business.
  lifecycle {
    ignore_changes = [route]
  }
}

# The egress route as a resource of its own: the table's other routes stay
# whoever's they are.
resource "azurerm_route" "default_egress" {
  name                   = "default-egress"
  resource_group_name    = azurerm_resource_group.kubernetes.name
  route_table_name       = azurerm_route_table.kubernetes.name
  address_prefix         = "0.0.0.0/0"
  next_hop_type          = "VirtualAppliance"
  next_hop_in_ip_address = "10.240.0.4"
}
