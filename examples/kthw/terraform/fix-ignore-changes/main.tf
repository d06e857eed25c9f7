# Fix 1 (the remedy of the post-mortems' blog post, and the azurerm provider's
# documentation): keep the inline subnet, but tell OpenTofu/Terraform that the
# subnets are not only this code's: `lifecycle { ignore_changes = [subnet] }`
# on the virtual network. A later apply no longer plans a change when someone
# else associates a route table, so it never PUTs the subnet without it. The
# price: changes to the subnets in this file are ignored too (edit them, then
# remove the line for one apply, or move to fix-association-resource).

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

  lifecycle {
    ignore_changes = [subnet]
  }
}
