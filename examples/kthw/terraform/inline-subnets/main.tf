# The network of Kubernetes the Hard Way on Azure, written the way the
# post-mortems' users write it ("The case of the missing AKS route table
# assignment", Azure/AKS#400): the virtual network declares its subnet inline,
# and nobody tells it about the route table, which someone else makes later
# (AKS, the lab's `az network route-table create`, or routekeeper).
#
# HAZARD: the first apply is fine. Every later apply (of any change, or
# of nothing at all) sees the subnet's route_table_id set by someone else,
# plans to "fix" it, and PUTs the virtual network with the inline subnet as
# written: without the route table. The subnet is detached and pod-to-pod
# traffic stops until someone re-associates it. See docs/iac.md.

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

  subnet {
    name             = "kubernetes-subnet"
    address_prefixes = ["10.240.0.0/24"]
    security_group   = azurerm_network_security_group.kubernetes.id
    # no route_table_id: the table is not this code's
  }
}
