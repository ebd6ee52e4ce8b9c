#!/bin/sh
sleep 120
