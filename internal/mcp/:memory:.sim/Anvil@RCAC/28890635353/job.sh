#!/bin/sh
sleep 3
